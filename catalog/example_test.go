package catalog_test

import (
	"context"
	"fmt"

	"github.com/plugkit/plugkit/catalog"
	greeterv1 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1"
	greeterv2 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2"
)

type helloV1 struct {
	greeterv1.UnimplementedGreeterServer
}

func (helloV1) Greet(_ context.Context, req *greeterv1.GreetRequest) (*greeterv1.GreetResponse, error) {
	return &greeterv1.GreetResponse{Message: "Hello, " + req.GetName() + "!"}, nil
}

type helloV2 struct {
	greeterv2.UnimplementedGreeterServer
}

func (helloV2) Greet(_ context.Context, req *greeterv2.GreetRequest) (*greeterv2.GreetResponse, error) {
	return &greeterv2.GreetResponse{Message: "Hello, " + req.GetPerson().GetName() + "!"}, nil
}

// One plugin binary serving two majors of the greeter kind under one
// name, and a second name for v1 only. A major's minor and capabilities
// are what all its implementations offer; Describe is what a host's
// manager reads before it dispenses. A binary's main ends with
// catalog.Serve(cookie, cat).
func ExampleNew() {
	cat, err := catalog.New("1.2.0",
		catalog.Implement[greeterv2.GreeterServer]("greeter", 2, 1, "example.com/hello",
			&greeterv2.Greeter_ServiceDesc, helloV2{}, "formal"),
		catalog.Implement[greeterv1.GreeterServer]("greeter", 1, 3, "example.com/hello",
			&greeterv1.Greeter_ServiceDesc, helloV1{}),
		catalog.Implement[greeterv1.GreeterServer]("greeter", 1, 2, "example.com/terse",
			&greeterv1.Greeter_ServiceDesc, helloV1{}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	d := cat.Describe()
	fmt.Println("plugin", d.GetPluginVersion())
	for _, k := range d.GetKinds() {
		for _, m := range k.GetMajors() {
			fmt.Printf("%s v%d.%d %s %v %v\n", k.GetName(), m.GetMajor(), m.GetMinor(), m.GetService(), m.GetNames(), m.GetCapabilities())
		}
	}

	// A server that does not implement the major's service is refused.
	_, err = catalog.New("1.2.0", catalog.Implement[greeterv1.GreeterServer]("greeter", 2, 0, "example.com/hello",
		&greeterv2.Greeter_ServiceDesc, helloV1{}))
	fmt.Println(err)
	// Output:
	// plugin 1.2.0
	// greeter v2.1 greeter.v2.Greeter [example.com/hello] [formal]
	// greeter v1.2 greeter.v1.Greeter [example.com/hello example.com/terse] []
	// catalog: greeter v2 "example.com/hello": catalog_test.helloV1 does not implement greeterv2.GreeterServer
}
