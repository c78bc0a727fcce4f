package greeter

import (
	"context"

	"google.golang.org/grpc"

	greeterv1 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1"
	greeterv2 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2"
)

// Adapters are what a greeter host passes to greeterv2.Open, to use v1-only
// plugins too: greeterv2.Open(ctx, m, "example.com/hello", greeter.Adapters).
var Adapters = greeterv2.Adapters{V1: func(f greeterv2.V1Forward) greeterv2.GreeterClient { return v1Adapter{f} }}

// v1Adapter presents a v1 plugin as v2. The generated V1Forward refuses
// Farewell, which v1 lacks; Greet changed, so it is written here: v1 greets
// in English only, and another language is refused rather than answered
// wrongly.
type v1Adapter struct{ greeterv2.V1Forward }

func (a v1Adapter) Greet(ctx context.Context, in *greeterv2.GreetRequest, opts ...grpc.CallOption) (*greeterv2.GreetResponse, error) {
	if lang := in.GetPerson().GetLanguage(); lang != "" && lang != "en" {
		return nil, a.Unimplemented("greeter v1 greets in English only; %q needs a greeter v2 plugin", lang)
	}
	return a.GreetV1(ctx, &greeterv1.GreetRequest{Name: in.GetPerson().GetName()}, opts...)
}
