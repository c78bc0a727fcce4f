// Command hello is a greeter plugin that speaks major 1 only: the plugin a
// host of greeter v2 loads through its adapter.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/greeter"
	greeterv1 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1"
)

// hello implements greeter v1.
type hello struct {
	greeterv1.UnimplementedGreeterServer
}

func (hello) Greet(_ context.Context, req *greeterv1.GreetRequest) (*greeterv1.GreetResponse, error) {
	return &greeterv1.GreetResponse{Message: "Hello, " + req.GetName() + "!"}, nil
}

// newCatalog declares what this plugin serves: main serves it as a
// binary, and the tests serve it inside the test process (plugintest).
func newCatalog() (*catalog.Catalog, error) {
	return catalog.New("1.0.0",
		catalog.Implement[greeterv1.GreeterServer](greeter.Kind, 1, 0, "example.com/hello",
			&greeterv1.Greeter_ServiceDesc, hello{}),
	)
}

func main() {
	cat, err := newCatalog()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	catalog.Serve(greeter.Cookie, cat)
}
