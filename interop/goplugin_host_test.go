package interop_test

// A go-plugin v1.8.0 host (plugin.NewClient) loading a plugkit plugin.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
)

// goPluginHost starts the test binary as the plugkit plugin through a
// go-plugin host with AutoMTLS, its hclog JSON logs going to logs and the
// plugin's stdout and stderr (after the handshake, over GRPCStdio) to
// stdout and stderr, and returns the client, the ObjectStore and the
// host's broker.
// Each modify function may change the configuration first.
func goPluginHost(t *testing.T, logs, stdout, stderr io.Writer, modify ...func(*goplugin.ClientConfig)) (*goplugin.Client, objectstorev1.ObjectStoreClient, *goplugin.GRPCBroker) {
	t.Helper()
	cmd := exec.Command(self(t))
	cmd.Env = childEnv("pk-store") // go-plugin appends the host's environment
	p := &objectStorePlugin{}
	cfg := &goplugin.ClientConfig{
		HandshakeConfig:  pkHandshake,
		Plugins:          goplugin.PluginSet{"objectstore": p},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		SyncStdout:       stdout,
		SyncStderr:       stderr,
		StartTimeout:     20 * time.Second,
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "gohost", Output: logs, Level: hclog.Trace, JSONFormat: true}),
	}
	for _, m := range modify {
		m(cfg)
	}
	c := goplugin.NewClient(cfg)
	t.Cleanup(c.Kill)
	rpc, err := c.Client()
	if err != nil {
		t.Fatalf("go-plugin Client: %v", err)
	}
	raw, err := rpc.Dispense("objectstore")
	if err != nil {
		t.Fatalf("Dispense: %v", err)
	}
	if err := pingWithin(rpc, 10*time.Second); err != nil {
		t.Fatalf("Ping (go-plugin's health check): %v", err)
	}
	if c.NegotiatedVersion() != 1 || c.Protocol() != goplugin.ProtocolGRPC {
		t.Errorf("negotiated %d over %s, want 1 over grpc", c.NegotiatedVersion(), c.Protocol())
	}
	return c, raw.(objectstorev1.ObjectStoreClient), p.broker
}

func TestGoPluginHostLoadsPlugkitPlugin(t *testing.T) {
	var logs, stdout, stderr syncBuffer
	c, store, _ := goPluginHost(t, &logs, &stdout, &stderr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// AutoMTLS: the plugin saw go-plugin's client certificate and verified it.
	resp, err := store.List(ctx, &objectstorev1.ListRequest{Prefix: "tls"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tls", "client-cert-verified", "client-cn=localhost"}; !slices.Equal(resp.GetKeys(), want) {
		t.Errorf("the plugin's view of the connection: %v, want %v", resp.GetKeys(), want)
	}

	// Real bytes both ways.
	putGet(t, store, "blob")

	// Init prints to stdout and stderr, and logs at every level.
	if _, err := store.Init(ctx, &objectstorev1.InitRequest{}); err != nil {
		t.Fatal(err)
	}
	if !waitContains(&stdout, pkStdoutLine+"\n", 1) {
		t.Errorf("SyncStdout did not receive the plugin's line; got %q", stdout.String())
	}
	if !waitContains(&stderr, pkStderrLine+"\n", 1) {
		t.Errorf("SyncStderr did not receive the plugin's line; got %q", stderr.String())
	}
	if !waitContains(&logs, pkLogRecords[len(pkLogRecords)-1].message, 1) {
		t.Fatalf("the plugin's log records did not reach go-plugin's logger:\n%s", logs.String())
	}
	records := parseHCLogJSON(t, logs.String())
	for _, want := range pkLogRecords {
		i := slices.IndexFunc(records, func(r map[string]any) bool { return r["@message"] == want.message })
		if i < 0 {
			t.Errorf("no record %q in go-plugin's log", want.message)
			continue
		}
		r := records[i]
		if r["@level"] != want.name || r["pct"] != float64(93) || !strings.HasPrefix(fmt.Sprint(r["@module"]), "gohost.") {
			t.Errorf("record %q arrived as %v; want level %s, pct 93, module gohost.*", want.message, r, want.name)
		}
	}

	killQuickly(t, c, &logs)
}

func TestBrokerWithGoPluginHost(t *testing.T) {
	_, store, b := goPluginHost(t, io.Discard, io.Discard, io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The go-plugin host serves with AcceptAndServe; the plugkit plugin dials.
	id := b.NextId()
	go b.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		srv := grpc.NewServer(opts...)
		objectstorev1.RegisterObjectStoreServer(srv, fixedKeys{keys: []string{"served-by-go-plugin-host"}})
		return srv
	})
	resp, err := store.List(ctx, &objectstorev1.ListRequest{Prefix: "dial:" + itoa(id)})
	if want := []string{"via-broker", "served-by-go-plugin-host", "asked-by-plugkit-plugin"}; err != nil || !slices.Equal(resp.GetKeys(), want) {
		t.Errorf("callback through the go-plugin host's broker: %v %v, want %v", resp.GetKeys(), err, want)
	}

	// The plugkit plugin serves; the go-plugin host dials with GRPCBroker.Dial.
	const pluginID = 500
	resp, err = store.List(ctx, &objectstorev1.ListRequest{Prefix: "serve:" + itoa(pluginID)})
	if err != nil || !slices.Equal(resp.GetKeys(), []string{"serving"}) {
		t.Fatalf("serve: %v %v", resp.GetKeys(), err)
	}
	conn, err := b.Dial(pluginID)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got, want := list(t, conn, "asked-by-go-plugin-host"), []string{"served-by-plugkit-plugin", "asked-by-go-plugin-host"}; !slices.Equal(got, want) {
		t.Errorf("call through the plugin's broker: %v, want %v", got, want)
	}
}

// TestGoPluginHostUnixSocketConfig: a go-plugin host with a
// UnixSocketConfig sends PLUGIN_UNIX_SOCKET_GROUP (and, only with a
// RunnerFunc, PLUGIN_UNIX_SOCKET_DIR; its TempDir is where the host's own
// brokered sockets go). The plugkit plugin's socket is then owned by that
// group and group-accessible, and the broker works both ways.
func TestGoPluginHostUnixSocketConfig(t *testing.T) {
	g, err := user.LookupGroupId(strconv.Itoa(os.Getgid()))
	if err != nil {
		t.Skipf("no name for group %d: %v", os.Getgid(), err)
	}
	dir := testutil.TempDir(t)
	c, store, b := goPluginHost(t, io.Discard, io.Discard, io.Discard, func(cfg *goplugin.ClientConfig) {
		cfg.UnixSocketConfig = &goplugin.UnixSocketConfig{TempDir: dir, Group: g.Name}
	})
	addr := c.ReattachConfig().Addr.String()
	fi, err := os.Stat(addr)
	if err != nil {
		t.Fatal(err)
	}
	if gid := testutil.FileGID(fi); gid != os.Getgid() || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket gid %d mode %v; want gid %d mode 0660", gid, fi.Mode().Perm(), os.Getgid())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := b.NextId()
	go b.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		srv := grpc.NewServer(opts...)
		objectstorev1.RegisterObjectStoreServer(srv, fixedKeys{keys: []string{"served-by-go-plugin-host"}})
		return srv
	})
	resp, err := store.List(ctx, &objectstorev1.ListRequest{Prefix: "dial:" + itoa(id)})
	if err != nil || len(resp.GetKeys()) != 3 {
		t.Errorf("callback through the go-plugin host's broker: %v %v", resp.GetKeys(), err)
	}
	if _, err := store.List(ctx, &objectstorev1.ListRequest{Prefix: "serve:77"}); err != nil {
		t.Fatal(err)
	}
	conn, err := b.Dial(77)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := list(t, conn, "x"); len(got) != 2 {
		t.Errorf("call through the plugin's broker: %v", got)
	}
	killQuickly(t, c, nil)
}

// putGet puts 1 MiB + 1 random bytes under key in 64 KiB chunks, checks
// the size and SHA-256 the store reports, and reads them back with Get.
func putGet(t *testing.T, store objectstorev1.ObjectStoreClient, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	data := make([]byte, 1<<20+1)
	rand.Read(data)
	put, err := store.Put(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := put.Send(&objectstorev1.PutRequest{Part: &objectstorev1.PutRequest_Key{Key: key}}); err != nil {
		t.Fatal(err)
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 64<<10)
		if err := put.Send(&objectstorev1.PutRequest{Part: &objectstorev1.PutRequest_Chunk{Chunk: rest[:n]}}); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	putResp, err := put.CloseAndRecv()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if putResp.GetSize() != int64(len(data)) || putResp.GetSha256() != hex.EncodeToString(sum[:]) {
		t.Errorf("Put: %v", putResp)
	}
	get, err := store.Get(ctx, &objectstorev1.GetRequest{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	var back []byte
	for {
		msg, err := get.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, msg.GetChunk()...)
	}
	if !bytes.Equal(back, data) {
		t.Errorf("Get returned %d bytes, not the %d put", len(back), len(data))
	}
}

// killQuickly runs go-plugin's Kill, which sends Shutdown and then waits
// up to 2 s before SIGKILL, and checks that the plugin stopped on the
// Shutdown RPC: well under 1 s.
func killQuickly(t *testing.T, c *goplugin.Client, logs *syncBuffer) {
	t.Helper()
	start := time.Now()
	c.Kill()
	d := time.Since(start)
	t.Logf("go-plugin Kill() of a plugkit plugin took %v (go-plugin waits 2 s before SIGKILL)", d)
	if d >= time.Second {
		t.Errorf("Kill took %v: the plugkit plugin did not stop on Shutdown", d)
	}
	if !c.Exited() {
		t.Error("Exited() false after Kill")
	}
	if logs != nil && strings.Contains(logs.String(), "plugin failed to exit gracefully") {
		t.Error("go-plugin had to kill the plugin")
	}
}

// TestGoPluginHostLoadsMemoryExample builds the shipped example plugin
// and runs it under a go-plugin host.
func TestGoPluginHostLoadsMemoryExample(t *testing.T) {
	exe := filepath.Join(testutil.TempDir(t), "objectstore-memory")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	exe = testutil.GoBuild(ctx, t, exe, "github.com/plugkit/plugkit/examples/objectstore/plugins/memory")
	var logs syncBuffer
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "PLUGKIT_EXAMPLE_PLUGIN", MagicCookieValue: "objectstore"},
		Plugins:          goplugin.PluginSet{"objectstore": &objectStorePlugin{}},
		Cmd:              exec.Command(exe),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     20 * time.Second,
		Logger:           hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug, JSONFormat: true}),
	})
	t.Cleanup(c.Kill)
	rpc, err := c.Client()
	if err != nil {
		t.Fatalf("go-plugin Client: %v", err)
	}
	if err := pingWithin(rpc, 10*time.Second); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	raw, err := rpc.Dispense("objectstore")
	if err != nil {
		t.Fatal(err)
	}
	store := raw.(objectstorev1.ObjectStoreClient)
	putGet(t, store, "photos/cat.jpg")
	if got := list(t, rpc.(*goplugin.GRPCClient).Conn, "photos/"); !slices.Equal(got, []string{"photos/cat.jpg"}) {
		t.Errorf("List(photos/) = %v", got)
	}
	killQuickly(t, c, &logs)
}

// pingWithin runs go-plugin's Ping (its health check, which has no
// deadline of its own) and gives up after d.
func pingWithin(rpc goplugin.ClientProtocol, d time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- rpc.Ping() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(d):
		return fmt.Errorf("no answer to Ping within %v", d)
	}
}

// parseHCLogJSON reads hclog JSON lines; other lines are skipped.
func parseHCLogJSON(t *testing.T, out string) []map[string]any {
	t.Helper()
	var records []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r map[string]any
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			records = append(records, r)
		}
	}
	return records
}

// TestPlugkitPluginOutlivesNoGoPluginHost: a go-plugin host (in a child
// process) starts the plugkit plugin and is SIGKILLed; the plugin,
// polling its parent every 200 ms, exits by itself within 1 s.
func TestPlugkitPluginOutlivesNoGoPluginHost(t *testing.T) {
	cmd, done, pid := startBlockingHost(t, "gp-host-block", "go-plugin")
	if !testutil.Running(pid) {
		t.Fatalf("plugin %d is not running", pid)
	}

	cmd.Process.Kill()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the go-plugin host survived SIGKILL")
	}
	killed := time.Now()
	if !waitFor(5*time.Second, func() bool { return !testutil.Running(pid) }) {
		t.Fatalf("plugin %d still running 5 s after its host was SIGKILLed", pid)
	}
	d := time.Since(killed)
	t.Logf("plugkit plugin exited %v after its go-plugin host was SIGKILLed", d)
	if d > time.Second {
		t.Errorf("plugin exited %v after its host died; want within 1 s", d)
	}
}

// TestGoPluginHostReattachesToPlugkitPlugin: a plugkit host starts the
// plugkit plugin (AutoMTLS off: a reattach description carries no
// certificate); a go-plugin host reattaches to it from plugkit's
// ReattachConfig, uses it and stops it with Kill.
func TestGoPluginHostReattachesToPlugkitPlugin(t *testing.T) {
	pc := startHost(t, launchConfig{
		Command: host.Command{
			Path:     self(t),
			Env:      childEnv("pk-store"),
			Cookie:   pkCookie,
			Timeouts: host.Timeouts{Start: 20 * time.Second},
		},
		Options: host.Options{
			Versions: []int{1},
			Security: host.Plaintext(),
			Logger:   slog.New(slog.DiscardHandler),
		},
	})
	rc := pc.ReattachConfig()
	addr, err := resolveAddr(rc.Addr.Network, rc.Addr.String)
	if err != nil {
		t.Fatal(err)
	}
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  pkHandshake,
		Plugins:          goplugin.PluginSet{"objectstore": &objectStorePlugin{}},
		Reattach:         &goplugin.ReattachConfig{Protocol: goplugin.Protocol(rc.Protocol), ProtocolVersion: rc.ProtocolVersion, Addr: addr, Pid: rc.Pid},
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
	})
	t.Cleanup(c.Kill)
	rpc, err := c.Client()
	if err != nil {
		t.Fatalf("go-plugin Client (reattach): %v", err)
	}
	if err := pingWithin(rpc, 10*time.Second); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	raw, err := rpc.Dispense("objectstore")
	if err != nil {
		t.Fatal(err)
	}
	putGet(t, raw.(objectstorev1.ObjectStoreClient), "reattached")
	start := time.Now()
	c.Kill()
	// go-plugin notices a reattached plugin's exit by polling its pid once a
	// second, so this Kill takes up to 1 s even though the plugin stops at once.
	t.Logf("go-plugin Kill() of a reattached plugkit plugin took %v", time.Since(start))
	select {
	case <-pc.Exited():
	case <-time.After(5 * time.Second):
		t.Error("the plugkit plugin did not stop on the reattached host's Shutdown")
	}
}
