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
// with a Binaries() check, v2 directly, v1 through the adapter, the
// capability of minor 2.1, and plugkit plugins list.
func TestGreeterKind(t *testing.T) {
	dir, cli := buildPlugins(t)
	// A binary of another kind, with another cookie: reported, not fatal.
	if err := os.WriteFile(filepath.Join(dir, "stranger"), []byte("#!/bin/sh\necho 'not a greeter' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	m := manager.New(manager.Config{Sources: []manager.Source{manager.Dirs(dir)}, Launch: host.Command{Cookie: greeter.Cookie}})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	usable := map[string]bool{}
	for _, b := range m.Binaries() {
		usable[strings.TrimSuffix(filepath.Base(b.Path), ".exe")] = b.Err == nil
	}
	if !usable["hello"] || !usable["polyglot"] || usable["stranger"] {
		t.Fatalf("usable binaries %v: want hello and polyglot, not stranger", usable)
	}

	poly, err := greeter.Open(ctx, m, "example.com/polyglot")
	if err != nil {
		t.Fatal(err)
	}
	if info := poly.Info(); info.Major != 2 || info.Minor != 1 || info.Adapted || !info.Has(greeter.CapFarewell) {
		t.Errorf("polyglot info %+v: want 2.1 direct with %q", info, greeter.CapFarewell)
	}
	for _, tc := range []struct {
		p    greeter.Person
		want string
	}{{greeter.Person{Name: "Ada"}, "Hello, Ada!"}, {greeter.Person{Name: "Ada", Language: "fr"}, "Bonjour, Ada!"}} {
		if got, err := poly.Greet(ctx, tc.p); err != nil || got != tc.want {
			t.Errorf("polyglot Greet(%+v) = %q, %v; want %q", tc.p, got, err, tc.want)
		}
	}
	if got, err := poly.Farewell(ctx, greeter.Person{Name: "Ada", Language: "de"}); err != nil || got != "Auf Wiedersehen, Ada!" {
		t.Errorf("polyglot Farewell = %q, %v", got, err)
	}

	hello, err := greeter.Open(ctx, m, "example.com/hello")
	if err != nil {
		t.Fatal(err)
	}
	if info := hello.Info(); info.Major != 1 || !info.Adapted {
		t.Errorf("hello info %+v: want major 1 through the adapter", info)
	}
	if got, err := hello.Greet(ctx, greeter.Person{Name: "Ada"}); err != nil || got != "Hello, Ada!" {
		t.Errorf("hello Greet = %q, %v", got, err)
	}
	if _, err := hello.Greet(ctx, greeter.Person{Name: "Ada", Language: "fr"}); status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "greeter v2 plugin") {
		t.Errorf("hello Greet in French: %v, want Unimplemented naming v2", err)
	}
	if _, err := hello.Farewell(ctx, greeter.Person{Name: "Ada"}); status.Code(err) != codes.Unimplemented {
		t.Errorf("hello Farewell: %v, want Unimplemented", err)
	}

	out, err := exec.CommandContext(ctx, cli, "plugins", "list", "--dir", dir, "--cookie", greeter.Cookie.Key+"="+greeter.Cookie.Value).CombinedOutput()
	if err != nil {
		t.Fatalf("plugkit plugins list: %v\n%s", err, out)
	}
	for _, want := range []string{"hello", "polyglot", "greeter", "2.1", "farewell", "example.com/polyglot", "stranger", "unusable"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("plugkit plugins list lacks %q:\n%s", want, out)
		}
	}
}
