package host_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/automtls"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/debugline"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestSecurityRefusals: each entry point refuses, before it launches or
// dials anything, a Security it cannot honour, with an error naming what
// to set instead.
func TestSecurityRefusals(t *testing.T) {
	id, err := automtls.New()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc := handshake.Reattach{Protocol: "grpc", ProtocolVersion: 1, Addr: handshake.ReattachAddr{Network: "unix", String: "/nonexistent/sock"}}
	const line = "1|1|unix|/nonexistent/sock|grpc|"
	opts := func(s host.Security) host.Options { return host.Options{Versions: []int{1}, Security: s} }
	for _, tc := range []struct {
		name string
		call func() (*host.Client, error)
		want []string
	}{
		{"Reattach with AutoMTLS", func() (*host.Client, error) {
			return host.Reattach(ctx, rc, opts(host.AutoMTLS(id)), host.ReattachOptions{})
		}, []string{"Reattach cannot use AutoMTLS", "leave Options.Security zero", "host.TLS"}},
		{"Connect without an identity", func() (*host.Client, error) {
			return host.Connect(ctx, line, opts(host.Security{}), host.ConnectOptions{})
		}, []string{"Connect needs the AutoMTLS identity", "host.AutoMTLS(id)"}},
		{"Dial with AutoMTLS", func() (*host.Client, error) {
			return host.Dial(ctx, host.Remote{Endpoints: []string{"127.0.0.1:1"}}, opts(host.AutoMTLS(id)))
		}, []string{"Dial needs Options.Security set to host.TLS", "host.Plaintext()"}},
		{"Start with TLS(nil)", func() (*host.Client, error) {
			return host.Start(ctx, host.Command{Path: "/nonexistent/plugin", Cookie: testCookie}, opts(host.TLS(nil)))
		}, []string{"host.TLS(nil)", "give the TLS configuration"}},
		{"Reattach with TLS(nil)", func() (*host.Client, error) {
			return host.Reattach(ctx, rc, opts(host.TLS(nil)), host.ReattachOptions{})
		}, []string{"host.TLS(nil)"}},
		{"Connect with TLS(nil)", func() (*host.Client, error) {
			return host.Connect(ctx, line, opts(host.TLS(nil)), host.ConnectOptions{})
		}, []string{"host.TLS(nil)"}},
		{"Dial with TLS(nil)", func() (*host.Client, error) {
			return host.Dial(ctx, host.Remote{Endpoints: []string{"127.0.0.1:1"}}, opts(host.TLS(nil)))
		}, []string{"host.TLS(nil)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.call()
			if err == nil {
				c.Close()
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestStartUsesTheGivenIdentity: with host.AutoMTLS(id), Start gives the
// plugin id's certificate (not a fresh one) and connects with it; the
// zero Security makes a fresh identity per Start.
func TestStartUsesTheGivenIdentity(t *testing.T) {
	id, err := automtls.New()
	if err != nil {
		t.Fatal(err)
	}
	certOf := func(security host.Security) string {
		t.Helper()
		var cert string
		cfg := config(t, "kv")
		cfg.Security = security
		cfg.Runner = testutil.RunnerFunc[*host.Launch](func(l *host.Launch) error {
			i := slices.IndexFunc(l.Cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, handshake.EnvClientCert+"=") })
			if i >= 0 {
				cert = strings.TrimPrefix(l.Cmd.Env[i], handshake.EnvClientCert+"=")
			}
			return nil
		})
		c := start(t, cfg)
		if !c.TLS() || !exists(t, c, "yes") {
			t.Fatalf("TLS() %v, or the connection does not work", c.TLS())
		}
		c.Close()
		return cert
	}
	if got := certOf(host.AutoMTLS(id)); got != string(id.PEM()) {
		t.Errorf("with host.AutoMTLS(id) the plugin got %.60q..., not id's certificate", got)
	}
	first, second := certOf(host.Security{}), certOf(host.Security{})
	if first == "" || first == second || first == string(id.PEM()) {
		t.Errorf("the zero Security did not give each Start a fresh certificate")
	}
}

// TestSecurityCompares: the settings compare as plugintest relies on:
// the zero Security is AutoMTLS(nil), Plaintext() is one value, and no
// other setting equals either.
func TestSecurityCompares(t *testing.T) {
	zero, plain := host.Security{}, host.Plaintext()
	if zero != host.AutoMTLS(nil) || plain != host.Plaintext() || zero == plain {
		t.Error("the zero Security is not AutoMTLS(nil), or Plaintext is not one value")
	}
	cfg := &tls.Config{ServerName: "x"}
	id, err := automtls.New()
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]host.Security{"TLS(cfg)": host.TLS(cfg), "AutoMTLS(id)": host.AutoMTLS(id)} {
		if s == zero || s == plain {
			t.Errorf("%s equals the zero Security or Plaintext", name)
		}
	}
}

// TestReattachReadsItsOptions: Reattach makes the host's brokered
// sockets in ConnectOptions.UnixSocketDir; Close leaves a plugin in debug mode
// running, and with StopDebugPlugins stops it.
func TestReattachReadsItsOptions(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	plugin := exec.Command(exe)
	plugin.Env = append(os.Environ(), modeEnv+"=kv", "PLUGKIT_DEBUG=1", "GORACE=atexit_sleep_ms=0")
	out, err := plugin.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := plugin.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { plugin.Wait(); close(exited) }()
	t.Cleanup(func() { plugin.Process.Kill(); <-exited })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no reattach line: %v", err)
	}
	rcs, err := debugline.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	_, rc, err := debugline.Only(rcs)
	if err != nil || !rc.Test {
		t.Fatalf("reattach configuration %+v, %v: want one, in debug mode", rc, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := host.Options{Versions: []int{1}}

	dir := testutil.TempDir(t)
	c, err := host.Reattach(ctx, rc, opts, host.ReattachOptions{ConnectOptions: host.ConnectOptions{UnixSocketDir: dir}, TrustTCPListener: trustTCP})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Broker().Serve(ctx, c.Broker().NextID(), func(*grpc.Server) {}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) == 0 && osdep.UnixSockets { // TCP on Windows
		t.Error("the brokered server's socket is not in ConnectOptions.UnixSocketDir")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c, err = host.Reattach(ctx, rc, opts, host.ReattachOptions{StopDebugPlugins: true, TrustTCPListener: trustTCP})
	if err != nil {
		t.Fatalf("the plugin in debug mode did not outlive its first host's Close: %v", err)
	}
	if !exists(t, c, "yes") {
		t.Error("the second reattached connection does not work")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Error("the plugin in debug mode still runs 5 s after Close with StopDebugPlugins")
	}
}
