// Command hello is a greeter plugin that speaks major 1 only: the plugin a
// host of greeter v2 loads through its adapter.
package main

import (
	"context"

	"github.com/plugkit/plugkit/catalog"
	greeterv1 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1"
	"github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1/greeterv1plugin"
)

func greet(_ context.Context, req *greeterv1.GreetRequest) (*greeterv1.GreetResponse, error) {
	return &greeterv1.GreetResponse{Message: "Hello, " + req.GetName() + "!"}, nil
}

// newCatalog is what main serves, and the tests serve in-process.
func newCatalog() (*catalog.Catalog, error) {
	return catalog.New("1.0.0", greeterv1plugin.Implement("example.com/hello", greeterv1plugin.Funcs{Greet: greet}.Server()))
}

func main() { catalog.Main(greeterv1.Cookie, newCatalog) }
