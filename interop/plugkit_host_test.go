package interop_test

// A plugkit host (host.Start) loading go-plugin plugins.

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
)

// launchConfig is what a test gives host.Start, each field reachable as
// cfg.Field.
type launchConfig struct {
	host.Command
	host.Options
}

// goPluginConfig starts the test binary as the go-plugin plugin mode,
// offering the given versions.
func goPluginConfig(t *testing.T, mode string, versions ...int) launchConfig {
	t.Helper()
	return launchConfig{
		Command: host.Command{
			Path:     self(t),
			Env:      childEnv(mode),
			Cookie:   gpCookie,
			Timeouts: host.Timeouts{Start: 20 * time.Second, Stop: 2 * time.Second},
		},
		Options: host.Options{
			Versions: versions,
			Name:     mode,
			Logger:   slog.New(slog.DiscardHandler),
		},
	}
}

// security is the Security of a test that turns AutoMTLS off or not.
func security(plaintext bool) host.Security {
	if plaintext {
		return host.Plaintext()
	}
	return host.Security{}
}

func startHost(t *testing.T, cfg launchConfig) *host.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := host.Start(ctx, cfg.Command, cfg.Options)
	if err != nil {
		t.Fatalf("host.Start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// list calls ObjectStore.List with prefix on conn.
func list(t *testing.T, conn grpc.ClientConnInterface, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := objectstorev1.NewObjectStoreClient(conn).List(ctx, &objectstorev1.ListRequest{Prefix: prefix})
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return resp.GetKeys()
}

func TestPlugkitHostLoadsGoPlugin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		noMTLS bool
	}{{"automtls", false}, {"plaintext", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, logs syncBuffer
			cfg := goPluginConfig(t, "gp-store", 4)
			cfg.Security = security(tc.noMTLS)
			cfg.Output.SyncStdout = &stdout
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			c := startHost(t, cfg)
			if c.TLS() == tc.noMTLS {
				t.Errorf("TLS() = %v with Plaintext %v", c.TLS(), tc.noMTLS)
			}
			if c.Version() != 4 || c.ReattachConfig().Addr.Network != defaultNetwork() {
				t.Errorf("version %d network %s, want 4 %s", c.Version(), c.ReattachConfig().Addr.Network, defaultNetwork())
			}
			if got := list(t, c.Conn(), ""); !slices.Equal(got, []string{"version-4"}) {
				t.Errorf("List = %v", got)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := c.Ping(ctx); err != nil {
				t.Errorf("Ping: %v", err)
			}
			// go-plugin forwards the plugin's os.Stdout over GRPCStdio.
			list(t, c.Conn(), "print")
			if !waitContains(&stdout, gpStdoutLine+"\n", 1) {
				t.Errorf("Output.SyncStdout did not receive the plugin's line; got %q", stdout.String())
			}
			start := time.Now()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			// go-plugin plugins stop on the Shutdown RPC, so Close needs
			// neither SIGTERM nor SIGKILL.
			if d := time.Since(start); d > time.Second {
				t.Errorf("Close took %v", d)
			}
			select {
			case <-c.Exited():
			default:
				t.Error("plugin not reaped after Close")
			}
			// A plugin that stops on Shutdown ends the RPC with EOF: that
			// is success, not a failure to log, even at DEBUG.
			if strings.Contains(logs.String(), "Shutdown RPC failed") || strings.Contains(logs.String(), "exited while") {
				t.Errorf("a normal stop was logged as a failure:\n%s", logs.String())
			}
		})
	}
}

func TestReflectionListsGoPluginServices(t *testing.T) {
	c := startHost(t, goPluginConfig(t, "gp-store", 3))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := reflectionv1.NewServerReflectionClient(c.Conn()).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionv1.ServerReflectionRequest{
		MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	stream.CloseSend()
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{
		"plugin.GRPCBroker", "plugin.GRPCController", "plugin.GRPCStdio",
		"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
		"objectstore.v1.ObjectStore",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("reflection lacks %s: %v", want, names)
		}
	}
}

func TestVersionNegotiationWithGoPlugin(t *testing.T) {
	// The plugin serves 2, 3 and 4; it picks the highest the host offers.
	for _, tc := range []struct {
		host []int
		want int
	}{{[]int{1, 2, 3}, 3}, {[]int{2}, 2}, {[]int{4, 9}, 4}, {[]int{9, 3, 2, 4}, 4}} {
		c := startHost(t, goPluginConfig(t, "gp-store", tc.host...))
		if c.Version() != tc.want {
			t.Errorf("host %v: negotiated %d, want %d", tc.host, c.Version(), tc.want)
		}
		want := "version-" + string(rune('0'+tc.want))
		if got := list(t, c.Conn(), ""); !slices.Equal(got, []string{want}) {
			t.Errorf("host %v: served by %v, want %s", tc.host, got, want)
		}
		c.Close()
	}
}

func TestNoMutualVersionWithGoPlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := goPluginConfig(t, "gp-store", 1, 7)
	c, err := host.Start(ctx, cfg.Command, cfg.Options)
	if err == nil {
		c.Close()
		t.Fatal("Start succeeded with no version in common")
	}
	// A go-plugin plugin with no match answers with its lowest version.
	var verr *handshake.VersionError
	if !errors.As(err, &verr) || !slices.Equal(verr.Plugin, []int{2}) || !slices.Equal(verr.Host, []int{1, 7}) {
		t.Errorf("error is not a VersionError naming [2] and [1 7]: %v", err)
	}
	for _, want := range []string{"plugin supports [2]", "host supports [1 7]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestBrokerWithGoPlugin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		noMTLS bool
	}{{"automtls", false}, {"plaintext", true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := goPluginConfig(t, "gp-store", 4)
			cfg.Security = security(tc.noMTLS)
			c := startHost(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			// The host serves; the go-plugin plugin dials with GRPCBroker.Dial.
			id := c.Broker().NextID()
			if err := c.Broker().Serve(ctx, id, func(s *grpc.Server) {
				objectstorev1.RegisterObjectStoreServer(s, fixedKeys{keys: []string{"served-by-plugkit-host"}})
			}); err != nil {
				t.Fatal(err)
			}
			got := list(t, c.Conn(), "dial:"+itoa(id))
			if want := []string{"via-broker", "served-by-plugkit-host", "asked-by-go-plugin"}; !slices.Equal(got, want) {
				t.Errorf("callback through the host's broker: %v, want %v", got, want)
			}

			// The go-plugin plugin serves with AcceptAndServe; the host dials.
			const pluginID = 1000
			if got := list(t, c.Conn(), "serve:"+itoa(pluginID)); !slices.Equal(got, []string{"serving"}) {
				t.Fatalf("serve: %v", got)
			}
			conn, err := c.Broker().Dial(ctx, pluginID)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if got, want := list(t, conn, "asked-by-plugkit"), []string{"served-by-go-plugin", "asked-by-plugkit"}; !slices.Equal(got, want) {
				t.Errorf("call through the plugin's broker: %v, want %v", got, want)
			}
		})
	}
}

func itoa(id uint32) string { return strconv.FormatUint(uint64(id), 10) }

// TestHostileStderrFromGoPlugin: a go-plugin plugin writes, before its
// handshake and again during a call (on its process stderr and through
// GRPCStdio), a JSON line whose @message is an object, a 200 KB line and
// binary junk. The plugkit host logs all of it and keeps working.
//
// go-plugin v1.8.0's own host panics on the first of those lines (its
// parseJSON does v.(string) on @message); TestGoPluginHostPanicsOnHostileStderr
// shows it.
func TestHostileStderrFromGoPlugin(t *testing.T) {
	var logs syncBuffer
	cfg := goPluginConfig(t, "gp-hostile", 4)
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := startHost(t, cfg)
	if got := list(t, c.Conn(), "hostile"); !slices.Equal(got, []string{"version-4"}) {
		t.Fatalf("List(hostile) = %v", got)
	}
	// Once before the handshake, once on stderr and once over GRPCStdio.
	if !waitContains(&logs, `"msg":"after the junk"`, 3) {
		t.Errorf("the lines after the junk did not all arrive:\n%.3000s", logs.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Errorf("Ping after hostile stderr: %v", err)
	}
	resp, err := objectstorev1.NewObjectStoreClient(c.Conn()).Exists(ctx, &objectstorev1.ExistsRequest{Key: "yes-still-working"})
	if err != nil || !resp.GetExists() {
		t.Errorf("Exists after hostile stderr: %v %v", resp, err)
	}
	out := logs.String()
	for _, want := range []string{`"msg":"{\"an\":\"object\"}"`, `"msg":"[\"list\"]"`, `"truncated":true`, "junk", `"plugin":"gp-hostile"`} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s", want)
		}
	}
	start := time.Now()
	c.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}
}

// TestGoPluginHostPanicsOnHostileStderr documents why plugkit's host
// parses stderr defensively: the same plugin, loaded by go-plugin v1.8.0's
// host (in a child process), crashes that host.
func TestGoPluginHostPanicsOnHostileStderr(t *testing.T) {
	var stdout, stderr syncBuffer
	cmd := exec.Command(self(t))
	cmd.Env = append(cmd.Environ(), childEnv("gp-host-hostile")...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("the go-plugin host neither panicked nor finished within 20 s")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || strings.Contains(stdout.String(), "survived") {
		t.Fatalf("the go-plugin host survived hostile stderr (err %v); has go-plugin fixed its issue 38?", err)
	}
	if !strings.Contains(stderr.String(), "panic: interface conversion") {
		t.Errorf("the go-plugin host failed, but not with the expected panic:\n%.2000s", stderr.String())
	}
}

// TestPlugkitHostReattachesToGoPlugin: a go-plugin host starts a go-plugin
// plugin (AutoMTLS off: a reattach description carries no certificate);
// a plugkit host reattaches to it from go-plugin's ReattachConfig, with
// the negotiated version filled in.
func TestPlugkitHostReattachesToGoPlugin(t *testing.T) {
	cmd := exec.Command(self(t))
	cmd.Env = childEnv("gp-store")
	gc := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  gpHandshake,
		VersionedPlugins: map[int]goplugin.PluginSet{4: {"objectstore": &objectStorePlugin{}}},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		StartTimeout:     20 * time.Second,
		Logger:           hclog.NewNullLogger(),
	})
	t.Cleanup(gc.Kill)
	if _, err := gc.Client(); err != nil {
		t.Fatalf("go-plugin Client: %v", err)
	}
	grc := gc.ReattachConfig()
	rc := handshake.Reattach{
		Protocol:        string(grc.Protocol),
		ProtocolVersion: grc.ProtocolVersion,
		Pid:             grc.Pid,
		Addr:            handshake.ReattachAddr{Network: grc.Addr.Network(), String: grc.Addr.String()},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := host.Options{Versions: []int{3, 4}, Logger: slog.New(slog.DiscardHandler)}
	// go-plugin's Client.ReattachConfig leaves ProtocolVersion 0; plugkit
	// checks the version, so it asks for it by name.
	if _, err := host.Reattach(ctx, rc, opts, host.ReattachOptions{}); err == nil || !strings.Contains(err.Error(), "no ProtocolVersion") {
		t.Errorf("Reattach without a ProtocolVersion: %v", err)
	}
	rc.ProtocolVersion = gc.NegotiatedVersion()
	c, err := host.Reattach(ctx, rc, opts, host.ReattachOptions{TrustTCPListener: trustTCP})
	if err != nil {
		t.Fatalf("host.Reattach: %v", err)
	}
	if got := list(t, c.Conn(), ""); !slices.Equal(got, []string{"version-4"}) {
		t.Errorf("List = %v", got)
	}
	c.Close()
}
