package main

import (
	"context"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/greeter"
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
	g, err := greeter.Open(ctx, m, "example.com/polyglot")
	if err != nil {
		t.Fatal(err)
	}
	if info := g.Info(); info.Major != 2 || info.Minor != 1 || info.Adapted || !info.Has(greeter.CapFarewell) {
		t.Errorf("info %+v: want greeter 2.1 direct, with %q", info, greeter.CapFarewell)
	}
	if got, err := g.Greet(ctx, greeter.Person{Name: "Ada", Language: "fr"}); err != nil || got != "Bonjour, Ada!" {
		t.Errorf("Greet in French = %q, %v", got, err)
	}
	if got, err := g.Farewell(ctx, greeter.Person{Name: "Ada", Language: "de"}); err != nil || got != "Auf Wiedersehen, Ada!" {
		t.Errorf("Farewell in German = %q, %v", got, err)
	}
	if _, err := g.Greet(ctx, greeter.Person{Name: "Ada", Language: "tlh"}); err == nil {
		t.Error("Greet in a language the plugin lacks: no error")
	}
}
