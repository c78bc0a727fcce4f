package greeter

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	greeterv1 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1"
	greeterv2 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/manager"
)

// Kind is the plugin kind's name in the catalog.
const Kind = "greeter"

// CapFarewell is the capability of minor 2.1: the Farewell call.
const CapFarewell = "farewell"

// Cookie is the greeter plugins' magic cookie: a host and its plugins agree
// on it, so that a binary of another host's kind is refused at once.
var Cookie = handshake.Cookie{Key: "GREETER_PLUGIN", Value: "hello-7c1f"}

// Person is someone to greet; Language is a BCP 47 tag, empty for "en".
type Person struct {
	Name     string
	Language string
}

// Greeter is the host's view of a greeter plugin: the latest major (v2),
// whichever major the plugin speaks.
type Greeter interface {
	// Greet returns a greeting for p.
	Greet(ctx context.Context, p Person) (string, error)
	// Farewell says goodbye to p; plugins without the "farewell"
	// capability answer with codes.Unimplemented.
	Farewell(ctx context.Context, p Person) (string, error)
	// Info says which plugin, major and capabilities serve this client.
	Info() manager.Info
}

// Open dispenses the greeter plugin name: v2 directly, or a v1-only plugin
// through the adapter.
func Open(ctx context.Context, m *manager.Manager, name string) (Greeter, error) {
	return manager.Dispense(ctx, m, Kind, name, manager.Majors[Greeter]{
		2: func(conn *manager.Conn, info manager.Info) (Greeter, error) {
			return v2Client{greeterv2.NewGreeterClient(conn), info}, nil
		},
		1: func(conn *manager.Conn, info manager.Info) (Greeter, error) {
			return v1Adapter{greeterv1.NewGreeterClient(conn), info}, nil
		},
	})
}

// v2Client calls a v2 plugin.
type v2Client struct {
	c    greeterv2.GreeterClient
	info manager.Info
}

func (v v2Client) Greet(ctx context.Context, p Person) (string, error) {
	resp, err := v.c.Greet(ctx, &greeterv2.GreetRequest{Person: &greeterv2.Person{Name: p.Name, Language: p.Language}})
	return resp.GetMessage(), err
}

func (v v2Client) Farewell(ctx context.Context, p Person) (string, error) {
	if !v.info.Has(CapFarewell) {
		return "", status.Errorf(codes.Unimplemented, "plugin %s v%s (greeter %d.%d) lacks the %q capability of greeter 2.1",
			v.info.Name, v.info.PluginVersion, v.info.Major, v.info.Minor, CapFarewell)
	}
	resp, err := v.c.Farewell(ctx, &greeterv2.FarewellRequest{Person: &greeterv2.Person{Name: p.Name, Language: p.Language}})
	return resp.GetMessage(), err
}

func (v v2Client) Info() manager.Info { return v.info }

// v1Adapter presents a v1 plugin as the v2 Greeter. v1 greets in English
// only, so another language is refused rather than answered wrongly, and
// Farewell, which v1 lacks, is Unimplemented.
type v1Adapter struct {
	c    greeterv1.GreeterClient
	info manager.Info
}

func (a v1Adapter) Greet(ctx context.Context, p Person) (string, error) {
	if p.Language != "" && p.Language != "en" {
		return "", status.Errorf(codes.Unimplemented, "plugin %s speaks greeter v1, which greets in English only; %q needs a greeter v2 plugin", a.info.Name, p.Language)
	}
	resp, err := a.c.Greet(ctx, &greeterv1.GreetRequest{Name: p.Name})
	return resp.GetMessage(), err
}

func (a v1Adapter) Farewell(context.Context, Person) (string, error) {
	return "", status.Error(codes.Unimplemented, fmt.Sprintf("plugin %s speaks greeter v1, which has no Farewell (greeter 2.1)", a.info.Name))
}

func (a v1Adapter) Info() manager.Info { return a.info }
