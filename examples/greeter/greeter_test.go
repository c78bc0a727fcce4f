package greeter_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/examples/greeter"
	greeterv2 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// buildPlugins builds the example plugins (and the plugkit CLI) into a
// fresh directory, as a plugin repository's CI would.
func buildPlugins(t *testing.T) (pluginDir, cli string) {
	t.Helper()
	pluginDir = testutil.TempDir(t)
	cli = filepath.Join(testutil.TempDir(t), "plugkit")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for out, pkg := range map[string]string{
		filepath.Join(pluginDir, "hello"):    "./plugins/hello",
		filepath.Join(pluginDir, "polyglot"): "./plugins/polyglot",
		cli:                                  "github.com/plugkit/plugkit/cmd/plugkit",
	} {
		if built := testutil.GoBuild(ctx, t, out, pkg); out == cli {
			cli = built
		}
	}
	return pluginDir, cli
}

// TestGreeterKind walks the host side of docs/your-own-kind.md: discovery
// with an Entries() check, v2 directly, v1 through the adapter, the
// capability of minor 2.1, and plugkit plugins list.
func TestGreeterKind(t *testing.T) {
	dir, cli := buildPlugins(t)
	// A binary of another kind, with another cookie: reported, not fatal.
	if err := os.WriteFile(filepath.Join(dir, "stranger"), []byte("#!/bin/sh\necho 'not a greeter' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	finder := &manager.Finder{Launch: host.Command{Cookie: greeterv2.Cookie}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	usable := map[string]bool{}
	for _, b := range m.Entries() {
		usable[strings.TrimSuffix(filepath.Base(b.Path), ".exe")] = b.Err == nil
	}
	if !usable["hello"] || !usable["polyglot"] || usable["stranger"] {
		t.Fatalf("usable binaries %v: want hello and polyglot, not stranger", usable)
	}

	poly, err := greeterv2.Open(ctx, m, "example.com/polyglot", greeter.Adapters)
	if err != nil {
		t.Fatal(err)
	}
	if info := poly.Info(); info.Major != 2 || info.Minor != 1 || info.Adapted || !info.Has(greeterv2.CapFarewell) {
		t.Errorf("polyglot info %+v: want 2.1 direct with %q", info, greeterv2.CapFarewell)
	}
	for _, tc := range []struct {
		p    *greeterv2.Person
		want string
	}{{&greeterv2.Person{Name: "Ada"}, "Hello, Ada!"}, {&greeterv2.Person{Name: "Ada", Language: "fr"}, "Bonjour, Ada!"}} {
		if got, err := poly.Greet(ctx, &greeterv2.GreetRequest{Person: tc.p}); err != nil || got.GetMessage() != tc.want {
			t.Errorf("polyglot Greet(%v) = %q, %v; want %q", tc.p, got.GetMessage(), err, tc.want)
		}
	}
	if got, err := poly.Farewell(ctx, &greeterv2.FarewellRequest{Person: &greeterv2.Person{Name: "Ada", Language: "de"}}); err != nil || got.GetMessage() != "Auf Wiedersehen, Ada!" {
		t.Errorf("polyglot Farewell = %q, %v", got.GetMessage(), err)
	}

	hello, err := greeterv2.Open(ctx, m, "example.com/hello", greeter.Adapters)
	if err != nil {
		t.Fatal(err)
	}
	if info := hello.Info(); info.Major != 1 || !info.Adapted {
		t.Errorf("hello info %+v: want major 1 through the adapter", info)
	}
	if got, err := hello.Greet(ctx, &greeterv2.GreetRequest{Person: &greeterv2.Person{Name: "Ada"}}); err != nil || got.GetMessage() != "Hello, Ada!" {
		t.Errorf("hello Greet = %q, %v", got.GetMessage(), err)
	}
	if _, err := hello.Greet(ctx, &greeterv2.GreetRequest{Person: &greeterv2.Person{Name: "Ada", Language: "fr"}}); status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "greeter v2 plugin") {
		t.Errorf("hello Greet in French: %v, want Unimplemented naming v2", err)
	}
	if _, err := hello.Farewell(ctx, &greeterv2.FarewellRequest{Person: &greeterv2.Person{Name: "Ada"}}); status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "example.com/hello") {
		t.Errorf("hello Farewell: %v, want Unimplemented naming the plugin", err)
	}

	out, err := exec.CommandContext(ctx, cli, "plugins", "list", "--dir", dir, "--cookie", greeterv2.Cookie.Key+"="+greeterv2.Cookie.Value).CombinedOutput()
	if err != nil {
		t.Fatalf("plugkit plugins list: %v\n%s", err, out)
	}
	for _, want := range []string{"hello", "polyglot", "greeter", "2.1", "farewell", "example.com/polyglot", "stranger", "unusable"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("plugkit plugins list lacks %q:\n%s", want, out)
		}
	}
}
