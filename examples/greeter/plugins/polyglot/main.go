// Command polyglot is a greeter plugin that speaks major 2 (minor 1, with
// the "farewell" capability) and, for older hosts, major 1.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/greeter"
	greeterv1 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1"
	greeterv2 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2"
)

// words holds the greetings and goodbyes by language.
var words = map[string][2]string{
	"en": {"Hello", "Goodbye"},
	"fr": {"Bonjour", "Au revoir"},
	"de": {"Hallo", "Auf Wiedersehen"},
}

func say(p *greeterv2.Person, which int) (string, error) {
	lang := p.GetLanguage()
	if lang == "" {
		lang = "en"
	}
	w, ok := words[lang]
	if !ok {
		return "", fmt.Errorf("no words for language %q (known: en, fr, de)", lang)
	}
	return w[which] + ", " + p.GetName() + "!", nil
}

// v2 implements greeter v2.1.
type v2 struct {
	greeterv2.UnimplementedGreeterServer
}

func (v2) Greet(_ context.Context, req *greeterv2.GreetRequest) (*greeterv2.GreetResponse, error) {
	msg, err := say(req.GetPerson(), 0)
	return &greeterv2.GreetResponse{Message: msg}, err
}

func (v2) Farewell(_ context.Context, req *greeterv2.FarewellRequest) (*greeterv2.FarewellResponse, error) {
	msg, err := say(req.GetPerson(), 1)
	return &greeterv2.FarewellResponse{Message: msg}, err
}

// v1 implements greeter v1 for older hosts, in English.
type v1 struct {
	greeterv1.UnimplementedGreeterServer
}

func (v1) Greet(_ context.Context, req *greeterv1.GreetRequest) (*greeterv1.GreetResponse, error) {
	msg, err := say(&greeterv2.Person{Name: req.GetName()}, 0)
	return &greeterv1.GreetResponse{Message: msg}, err
}

// newCatalog declares what this plugin serves: main serves it as a
// binary, and the tests serve it inside the test process (plugintest).
func newCatalog() (*catalog.Catalog, error) {
	return catalog.New("2.1.0",
		catalog.Implement[greeterv2.GreeterServer](greeter.Kind, 2, 1, "example.com/polyglot",
			&greeterv2.Greeter_ServiceDesc, v2{}, greeter.CapFarewell),
		catalog.Implement[greeterv1.GreeterServer](greeter.Kind, 1, 0, "example.com/polyglot",
			&greeterv1.Greeter_ServiceDesc, v1{}),
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
