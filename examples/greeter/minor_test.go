package greeter_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/catalog"
	greeterv2 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2"
	"github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2/greeterv2plugin"
	"github.com/plugkit/plugkit/plugintest"
)

// TestClientRefusesNewerMinorWithoutACall serves a greeter v2 plugin that
// announces 2.0 but would answer Farewell: the generated client must refuse
// Farewell (greeter 2.1) with Unimplemented naming the minor and the
// plugin, and the plugin must never see the call.
func TestClientRefusesNewerMinorWithoutACall(t *testing.T) {
	var farewells atomic.Int32
	funcs := greeterv2plugin.Funcs{
		Greet: func(context.Context, *greeterv2.GreetRequest) (*greeterv2.GreetResponse, error) {
			return &greeterv2.GreetResponse{Message: "hi"}, nil
		},
		Farewell: func(context.Context, *greeterv2.FarewellRequest) (*greeterv2.FarewellResponse, error) {
			farewells.Add(1)
			return &greeterv2.FarewellResponse{Message: "bye"}, nil
		},
	}
	cat, err := catalog.New("2.0.3", catalog.Implement(greeterv2.Kind, 2, 0, "example.com/old", &greeterv2.Greeter_ServiceDesc, funcs.Server()))
	if err != nil {
		t.Fatal(err)
	}
	m := plugintest.ServeCatalog(t, cat)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := greeterv2.Open(ctx, m, "example.com/old", greeterv2.Adapters{})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := g.Greet(ctx, &greeterv2.GreetRequest{}); err != nil || resp.GetMessage() != "hi" {
		t.Fatalf("Greet (greeter 2.0) = %v, %v", resp, err)
	}
	_, err = g.Farewell(ctx, &greeterv2.FarewellRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("Farewell from a greeter 2.0 plugin: %v, want Unimplemented", err)
	}
	for _, want := range []string{"Farewell", "greeter 2.1", "example.com/old", "2.0.3", "greeter 2.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if n := farewells.Load(); n != 0 {
		t.Errorf("the plugin received %d Farewell calls; the client must refuse without one", n)
	}
}
