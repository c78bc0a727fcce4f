package main

import (
	"context"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/greeter"
	greeterv2 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2"
	"github.com/plugkit/plugkit/plugintest"
)

// TestHello serves the plugin in-process and loads it as a greeter v2 host
// does: through the v1 adapter.
func TestHello(t *testing.T) {
	cat, err := newCatalog()
	if err != nil {
		t.Fatal(err)
	}
	m := plugintest.ServeCatalog(t, cat)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := greeterv2.Open(ctx, m, "example.com/hello", greeter.Adapters)
	if err != nil {
		t.Fatal(err)
	}
	if info := g.Info(); info.Major != 1 || !info.Adapted {
		t.Errorf("info %+v: want major 1 through the adapter", info)
	}
	if got, err := g.Greet(ctx, &greeterv2.GreetRequest{Person: &greeterv2.Person{Name: "Ada"}}); err != nil || got.GetMessage() != "Hello, Ada!" {
		t.Errorf("Greet = %q, %v", got.GetMessage(), err)
	}
}
