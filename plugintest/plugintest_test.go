package plugintest_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/greeter"
	greeterv1 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1"
	greeterv2 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/internal/testpki"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/plugintest"
)

type hello struct {
	greeterv1.UnimplementedGreeterServer
}

func (hello) Greet(_ context.Context, req *greeterv1.GreetRequest) (*greeterv1.GreetResponse, error) {
	return &greeterv1.GreetResponse{Message: "Hello, " + req.GetName() + "!"}, nil
}

type hello2 struct {
	greeterv2.UnimplementedGreeterServer
}

func (hello2) Greet(_ context.Context, req *greeterv2.GreetRequest) (*greeterv2.GreetResponse, error) {
	return &greeterv2.GreetResponse{Message: "Hi, " + req.GetPerson().GetName() + "!"}, nil
}

func config() plugin.Config {
	return plugin.Config{
		Versions: map[int]plugin.Register{
			1: func(s *grpc.Server, _ *broker.Broker) error { greeterv1.RegisterGreeterServer(s, hello{}); return nil },
			2: func(s *grpc.Server, _ *broker.Broker) error { greeterv2.RegisterGreeterServer(s, hello2{}); return nil },
		},
	}
}

// TestStart serves a plugin.Config in the test process and checks what a
// host would: the negotiated version, a unix socket, AutoMTLS, a working
// call; and that the cleanup stops the plugin and removes its socket.
func TestStart(t *testing.T) {
	var addr string
	t.Run("serve", func(t *testing.T) {
		c := plugintest.Start(t, config(), plugintest.Options{})
		addr = c.ReattachConfig().Addr.String
		wantNet := "unix" // loopback TCP on Windows, without a socket file
		if !osdep.UnixSockets {
			wantNet = "tcp"
		}
		if c.Version() != 2 || c.ReattachConfig().Addr.Network != wantNet || !c.TLS() {
			t.Errorf("version %d over %s (TLS %v): want 2 over %s with AutoMTLS", c.Version(), c.ReattachConfig().Addr.Network, c.TLS(), wantNet)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := greeterv2.NewGreeterClient(c.Conn()).Greet(ctx, &greeterv2.GreetRequest{Person: &greeterv2.Person{Name: "Ada"}})
		if err != nil || resp.GetMessage() != "Hi, Ada!" {
			t.Errorf("Greet = %q, %v", resp.GetMessage(), err)
		}
		if err := c.Ping(ctx); err != nil {
			t.Errorf("health check: %v", err)
		}
		if _, err := os.Stat(addr); err != nil && wantNet == "unix" {
			t.Errorf("the plugin's socket: %v", err)
		}
	})
	if _, err := os.Stat(addr); !os.IsNotExist(err) && osdep.UnixSockets {
		t.Errorf("after the test, the plugin's socket %s is still there (stat: %v)", addr, err)
	}
}

// Start takes exactly one Options: with the variadic signature it had,
// Start(t, cfg, Options{Versions: ...}, Options{Security: host.Plaintext()}) compiled
// and silently dropped the second. This does not compile against it.
var _ func(testing.TB, plugin.Config, plugintest.Options) *host.Client = plugintest.Start

// TestStartVersions offers the plugin only version 1, in plain text: both
// settings of one Options apply.
func TestStartVersions(t *testing.T) {
	c := plugintest.Start(t, config(), plugintest.Options{Versions: []int{1}, Security: host.Plaintext()})
	if c.Version() != 1 || c.TLS() {
		t.Fatalf("version %d, TLS %v: want 1 in plain text", c.Version(), c.TLS())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := greeterv1.NewGreeterClient(c.Conn()).Greet(ctx, &greeterv1.GreetRequest{Name: "Ada"})
	if err != nil || resp.GetMessage() != "Hello, Ada!" {
		t.Errorf("Greet = %q, %v", resp.GetMessage(), err)
	}
}

// TestServeCatalog dispenses a catalog's implementations through the
// host's typed client, directly (v2) and through the adapter (v1).
func TestServeCatalog(t *testing.T) {
	cat, err := catalog.New("1.2.3",
		catalog.Implement[greeterv2.GreeterServer](greeterv2.Kind, 2, 0, "example.com/two", &greeterv2.Greeter_ServiceDesc, hello2{}),
		catalog.Implement[greeterv1.GreeterServer](greeterv1.Kind, 1, 0, "example.com/one", &greeterv1.Greeter_ServiceDesc, hello{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	m := plugintest.ServeCatalog(t, cat)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, want := range map[string]string{"example.com/two": "Hi, Ada!", "example.com/one": "Hello, Ada!"} {
		g, err := greeterv2.Open(ctx, m, name, greeter.Adapters)
		if err != nil {
			t.Fatalf("greeterv2.Open(%s): %v", name, err)
		}
		if got, err := g.Greet(ctx, &greeterv2.GreetRequest{Person: &greeterv2.Person{Name: "Ada"}}); err != nil || got.GetMessage() != want {
			t.Errorf("%s: Greet = %q, %v; want %q", name, got.GetMessage(), err, want)
		}
		if info := g.Info(); info.PluginVersion != "1.2.3" || info.Adapted != (name == "example.com/one") {
			t.Errorf("%s: info %+v", name, info)
		}
	}
	if _, err := greeterv2.Open(ctx, m, "example.com/none", greeter.Adapters); err == nil {
		t.Error("a name the catalog lacks was dispensed")
	}
}

// TestStartOwnTLS serves a plugin with its own PKI (Config.TLSProvider),
// the host given that PKI in Options.TLS instead of AutoMTLS.
func TestStartOwnTLS(t *testing.T) {
	ca, err := testpki.NewCA("plugintest CA")
	if err != nil {
		t.Fatal(err)
	}
	pair := func(name string) tls.Certificate {
		p, err := ca.Issue(name, "plugin.test")
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.TLS()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	serverCert, clientCert := pair("plugin"), pair("host")
	cfg := config()
	cfg.TLSProvider = func() (*tls.Config, error) {
		return &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool(), RootCAs: ca.Pool(), ServerName: "plugin.test"}, nil
	}
	c := plugintest.Start(t, cfg, plugintest.Options{Security: host.TLS(&tls.Config{Certificates: []tls.Certificate{clientCert}, RootCAs: ca.Pool(), ServerName: "plugin.test"})})
	if !c.TLS() {
		t.Error("the connection is not TLS")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := greeterv2.NewGreeterClient(c.Conn()).Greet(ctx, &greeterv2.GreetRequest{Person: &greeterv2.Person{Name: "Ada"}}); err != nil {
		t.Errorf("Greet over the team's own TLS: %v", err)
	}
}

// TestRun serves without a testing.TB: stop shuts the plugin down,
// removes its socket, and answers the same when called again; a Config
// Start would refuse is Run's error.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, stop, err := plugintest.Run(ctx, config(), plugintest.Options{Versions: []int{1}, Security: host.Plaintext()})
	if err != nil {
		t.Fatal(err)
	}
	if c.Version() != 1 || c.TLS() {
		t.Errorf("version %d, TLS %v: want 1 in plain text", c.Version(), c.TLS())
	}
	resp, err := greeterv1.NewGreeterClient(c.Conn()).Greet(ctx, &greeterv1.GreetRequest{Name: "Ada"})
	if err != nil || resp.GetMessage() != "Hello, Ada!" {
		t.Errorf("Greet = %q, %v", resp.GetMessage(), err)
	}
	addr := c.ReattachConfig().Addr.String
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(addr)); !os.IsNotExist(err) && osdep.UnixSockets {
		t.Errorf("after stop, the socket's directory %s is still there (stat: %v)", filepath.Dir(addr), err)
	}
	if err := stop(); err != nil {
		t.Errorf("stop again: %v", err)
	}
	if _, _, err := plugintest.Run(ctx, plugin.Config{}, plugintest.Options{}); err == nil || !strings.Contains(err.Error(), "Versions is empty") {
		t.Errorf("Run without versions: %v", err)
	}
}

// TestRunRefusesDebugMode checks that a Config in debug mode, which
// serves for a person and prints a reattach line instead of the
// handshake, is refused at once with an error saying so, rather than
// failing to parse a handshake.
func TestRunRefusesDebugMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := config()
	cfg.Debug = true
	c, stop, err := plugintest.Run(ctx, cfg, plugintest.Options{})
	if err == nil {
		stop()
		t.Fatalf("Run in debug mode connected (version %d): want an error", c.Version())
	}
	if !strings.Contains(err.Error(), "Config.Debug") {
		t.Fatalf("Run in debug mode: %v: want an error naming Config.Debug", err)
	}
}

// TestSecurityMustFitThePlugin: host.TLS(cfg) is for a plugin with its own
// TLS alone, and such a plugin needs it; either mismatch is refused before
// anything starts, with an error that says what to set, instead of being
// ignored or failing later at the TLS handshake.
func TestSecurityMustFitThePlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := plugintest.Run(ctx, config(), plugintest.Options{Security: host.TLS(&tls.Config{ServerName: "plugin.test"})})
	if err == nil || !strings.Contains(err.Error(), "serves no TLS of its own") {
		t.Errorf("host.TLS for a plugin without a TLSProvider: %v; want it refused, naming the mismatch", err)
	}
	cfg := config()
	cfg.TLSProvider = func() (*tls.Config, error) { return &tls.Config{}, nil }
	for name, sec := range map[string]host.Security{"zero": {}, "AutoMTLS": host.AutoMTLS(nil), "Plaintext": host.Plaintext()} {
		_, _, err := plugintest.Run(ctx, cfg, plugintest.Options{Security: sec})
		if err == nil || !strings.Contains(err.Error(), "give the host its PKI") {
			t.Errorf("%s for a plugin with its own TLS: %v; want it refused, asking for host.TLS", name, err)
		}
	}
}
