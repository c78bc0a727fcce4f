package main

import (
	"context"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/greeter"
	greeterv2 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2"
	"github.com/plugkit/plugkit/plugintest"
)

// TestPolyglot serves the plugin's catalog inside the test, without
// building the binary, and checks it through the host's typed client:
// greeter 2.1 directly, with the farewell capability.
func TestPolyglot(t *testing.T) {
	cat, err := newCatalog()
	if err != nil {
		t.Fatal(err)
	}
	m := plugintest.ServeCatalog(t, cat)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := greeterv2.Open(ctx, m, "example.com/polyglot", greeter.Adapters)
	if err != nil {
		t.Fatal(err)
	}
	if info := g.Info(); info.Major != 2 || info.Minor != 1 || info.Adapted || !info.Has(greeterv2.CapFarewell) {
		t.Errorf("info %+v: want greeter 2.1 direct, with %q", info, greeterv2.CapFarewell)
	}
	if got, err := g.Greet(ctx, &greeterv2.GreetRequest{Person: &greeterv2.Person{Name: "Ada", Language: "fr"}}); err != nil || got.GetMessage() != "Bonjour, Ada!" {
		t.Errorf("Greet in French = %q, %v", got.GetMessage(), err)
	}
	if got, err := g.Farewell(ctx, &greeterv2.FarewellRequest{Person: &greeterv2.Person{Name: "Ada", Language: "de"}}); err != nil || got.GetMessage() != "Auf Wiedersehen, Ada!" {
		t.Errorf("Farewell in German = %q, %v", got.GetMessage(), err)
	}
	if _, err := g.Greet(ctx, &greeterv2.GreetRequest{Person: &greeterv2.Person{Name: "Ada", Language: "tlh"}}); err == nil {
		t.Error("Greet in a language the plugin lacks: no error")
	}
}
