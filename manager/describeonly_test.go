package manager_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// rawDescribeLine is what a test plugin mode that writes its own
// describe line prints, whatever its environment says: a broken line,
// or ("describe-stays") a good one after which it does not exit.
func rawDescribeLine(mode string) (string, bool) {
	good, _ := proto.Marshal(&catalogv1.DescribeResponse{PluginVersion: "1.0.0", Kinds: []*catalogv1.Kind{{
		Name: "objectstore", Majors: []*catalogv1.Major{{Major: 1, Service: "objectstore.v1.ObjectStore", Names: []string{"raw"}}},
	}}})
	line, _ := handshake.FormatDescribe(good)
	switch mode {
	case "describe-stays":
		return line, true
	case "describe-bad64":
		return handshake.DescribePrefix + "not*base64", true
	case "describe-v2":
		return strings.Replace(line, "|1|", "|2|", 1), true
	case "describe-huge":
		return handshake.DescribePrefix + strings.Repeat("A", handshake.MaxDescribeLine), true
	case "describe-notproto":
		bad, _ := handshake.FormatDescribe([]byte{0xff, 0xff})
		return bad, true
	case "describe-nameless":
		d, _ := proto.Marshal(&catalogv1.DescribeResponse{Kinds: []*catalogv1.Kind{{Majors: []*catalogv1.Major{{Major: 1, Names: []string{"x"}}}}}})
		bad, _ := handshake.FormatDescribe(d)
		return bad, true
	}
	return "", false
}

// describeCalls returns Finder.Host options whose interceptor records
// every gRPC call the manager's connections make (health checks and
// plugkit's own services left out), and what it recorded.
func describeCalls() (host.Options, func() []string) {
	var mu sync.Mutex
	var methods []string
	record := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		mu.Lock()
		methods = append(methods, method)
		mu.Unlock()
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	opts := host.Options{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(record)}}
	return opts, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.DeleteFunc(slices.Clone(methods), func(m string) bool {
			return strings.HasPrefix(m, "/grpc.health.v1.") || strings.HasPrefix(m, "/plugin.")
		})
	}
}

// TestDescribeWithoutServing: a plugkit catalog plugin is described by
// its describe line alone (no gRPC connection, so no Describe call),
// while plugins that ignore the request (a plugin.Serve catalog, a
// go-plugin plugin) are described over gRPC on that same process: one
// launch per binary, and every description the same as over gRPC.
func TestDescribeWithoutServing(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "fast", "fast 1,2 presign")
	writePlugin(t, dir, "liar", "liar")      // plugin.Serve with its own Catalog service
	writePlugin(t, dir, "plain", "goplugin") // go-plugin: no catalog
	opts, calls := describeCalls()
	var runs atomic.Int32 // processes started, as the Runner sees them
	runner := testutil.RunnerFunc[*host.Launch](func(*host.Launch) error { runs.Add(1); return nil })
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie, Runner: runner}, Host: opts}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Logger: opts.Logger, Telemetry: opts.Telemetry})
	if got, ran := finder.Launches(), runs.Load(); got != 3 || ran != 3 {
		t.Errorf("Launches() = %d, the Runner ran %d processes; want 3: one per binary, with no second launch for those that serve", got, ran)
	}
	byName := map[string]manager.Entry{}
	for _, b := range m.Entries() {
		byName[strings.TrimSuffix(filepath.Base(b.Path), ".exe")] = b // Windows plugins keep their .exe
	}
	fast := byName["fast"]
	if fast.Err != nil || len(fast.Description.GetKinds()) != 1 || len(fast.Description.GetKinds()[0].GetMajors()) != 2 {
		t.Fatalf("fast: %v, description %v; want objectstore majors 2 and 1", fast.Err, fast.Description)
	}
	if caps := fast.Description.GetKinds()[0].GetMajors()[0].GetCapabilities(); !slices.Equal(caps, []string{"presign"}) {
		t.Errorf("fast: major 2's capabilities %q, want [presign]", caps)
	}
	if d := byName["liar"].Description; d.GetPluginVersion() != "6.6.6" {
		t.Errorf("liar (served over gRPC): %v, %v", byName["liar"].Err, d)
	}
	if err := byName["plain"].Err; err == nil || !strings.Contains(err.Error(), "plain go-plugin plugin") {
		t.Errorf("plain: %v, want it refused as a go-plugin plugin without a catalog", err)
	}
	// Describe over gRPC for the two that served, none for "fast".
	want := []string{catalogv1.Catalog_Describe_FullMethodName, catalogv1.Catalog_Describe_FullMethodName}
	if got := calls(); !slices.Equal(got, want) {
		t.Errorf("gRPC calls during Discover: %q, want %q (only the two plugins that serve)", got, want)
	}
	// The plugin described without serving still serves when used.
	conn, _ := store(t, m, "fast")
	initStore(t, conn, map[string]string{"bucket": "b"})
}

// TestBadDescribeLines: a describe line that is malformed, of another
// version, too long, not a DescribeResponse or not a usable one, and a
// plugin that does not exit after its line, are each an error naming the
// plugin; nothing hangs.
func TestBadDescribeLines(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	want := map[string]string{
		"describe-bad64":    "not standard base64",
		"describe-v2":       `want "plugkit-describe|1|"`,
		"describe-huge":     "handshake line longer than",
		"describe-notproto": "its describe line holds no DescribeResponse",
		"describe-nameless": "kind #1 has no name",
		"describe-stays":    "did not exit within",
	}
	for mode := range want {
		writePlugin(t, dir, mode, mode)
	}
	f := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	f.Launch.Timeouts.Stop = 300 * time.Millisecond
	m := newManager(t, manager.Config{Sources: []manager.Source{f.Dirs(dir)}})
	for _, b := range m.Entries() {
		name := strings.TrimSuffix(filepath.Base(b.Path), ".exe")
		if b.Err == nil {
			t.Errorf("%s: described as %v, want an error", name, b.Description)
			continue
		}
		msg := b.Err.Error()
		if !strings.Contains(msg, want[name]) {
			t.Errorf("%s: %q lacks %q", name, msg, want[name])
		}
		if name != "describe-nameless" && !strings.Contains(msg, name) {
			t.Errorf("%s: %q does not name the plugin", name, msg)
		}
		if b.Description != nil {
			t.Errorf("%s: refused, but its description is kept", name)
		}
	}
	if got := len(m.Entries()); got != len(want) {
		t.Errorf("%d binaries, want %d", got, len(want))
	}
}
