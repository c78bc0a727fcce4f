// Package greeter is the host side of the "greeter" plugin kind, the kind
// that docs/your-own-kind.md builds from scratch: its API v1 and v2
// (proto/, gen/), the host's typed Greeter with the v1->v2 adapter, and two
// plugins, hello (v1 only) and polyglot (v2.1 and v1).
//
// The host always works against the latest interface, v2:
//
//	m := manager.New(manager.Config{Sources: []manager.Source{manager.Dirs("./plugins")}, Launch: host.Command{Cookie: greeter.Cookie}})
//	if err := m.Discover(ctx); err != nil { ... }
//	g, err := greeter.Open(ctx, m, "example.com/hello") // a v1 plugin, adapted
//	msg, err := g.Greet(ctx, greeter.Person{Name: "Ada"})
package greeter
