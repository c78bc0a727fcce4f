// Command polyglot is a greeter plugin that speaks major 2 (minor 1, with
// the "farewell" capability) and, for older hosts, major 1.
package main

import (
	"cmp"
	"context"
	"fmt"

	"github.com/plugkit/plugkit/catalog"
	greeterv1 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1"
	"github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1/greeterv1plugin"
	greeterv2 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2"
	"github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2/greeterv2plugin"
)

var words = map[string][2]string{"en": {"Hello", "Goodbye"}, "fr": {"Bonjour", "Au revoir"}, "de": {"Hallo", "Auf Wiedersehen"}} // by language

// say greets p (which 0) or says goodbye (1) in p's language.
func say(p *greeterv2.Person, which int) (string, error) {
	w, ok := words[cmp.Or(p.GetLanguage(), "en")]
	if !ok {
		return "", fmt.Errorf("no words for language %q (known: en, fr, de)", p.GetLanguage())
	}
	return w[which] + ", " + p.GetName() + "!", nil
}

func greet(_ context.Context, req *greeterv2.GreetRequest) (*greeterv2.GreetResponse, error) {
	msg, err := say(req.GetPerson(), 0)
	return &greeterv2.GreetResponse{Message: msg}, err
}

func farewell(_ context.Context, req *greeterv2.FarewellRequest) (*greeterv2.FarewellResponse, error) {
	msg, err := say(req.GetPerson(), 1)
	return &greeterv2.FarewellResponse{Message: msg}, err
}

// greetV1 serves greeter v1 for older hosts, in English.
func greetV1(_ context.Context, req *greeterv1.GreetRequest) (*greeterv1.GreetResponse, error) {
	msg, err := say(&greeterv2.Person{Name: req.GetName()}, 0)
	return &greeterv1.GreetResponse{Message: msg}, err
}

// newCatalog is what main serves, and the tests serve in-process.
func newCatalog() (*catalog.Catalog, error) {
	return catalog.New("2.1.0",
		greeterv2plugin.Implement("example.com/polyglot", greeterv2plugin.Funcs{Greet: greet, Farewell: farewell}.Server()),
		greeterv1plugin.Implement("example.com/polyglot", greeterv1plugin.Funcs{Greet: greetV1}.Server()),
	)
}

func main() { catalog.Main(greeterv2.Cookie, newCatalog) }
