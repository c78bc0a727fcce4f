package broker

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestMuxStreamFloodIsBounded: a host that opens 20,000 yamux streams
// against a multiplexing plugin, and sends nothing on them, costs the
// plugin a bounded number of goroutines and under 32 MiB: the plugin hands
// out at most MaxStreams of them (each a gRPC server connection), yamux
// holds its accept backlog and resets the rest, and Close leaves nothing
// behind. The host is a yamux client whose own limit on unanswered opens
// is lifted, as a hostile host's would be.
func TestMuxStreamFloodIsBounded(t *testing.T) {
	const streams = 20_000
	const backlog = 256 // yamux's default accept backlog, which muxConfig keeps
	baseGoroutines := runtime.NumGoroutine()
	baseMem := testutil.UsedMemory()
	leaks := goleak.IgnoreCurrent()

	// The plugin, as plugin.Run serves it.
	ln, err := testListen(testutil.TempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	pmux := listenMux(ln)
	plugin := newBroker(brokerwire.Options{Mux: pmux})
	srv := grpc.NewServer()
	pluginpb.RegisterGRPCBrokerServer(srv, serverHandler{b: plugin})
	served := make(chan struct{})
	go func() { srv.Serve(pmux.Main()); close(served) }()

	// The hostile host.
	raw, err := net.Dial(ln.Addr().Network(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	cfg.AcceptBacklog = streams + 1 // also its limit on unanswered opens
	cfg.StreamOpenTimeout = 0       // no goroutine per open to watch it
	sess, err := yamux.Client(raw, cfg)
	if err != nil {
		t.Fatal(err)
	}
	maxGoroutines := 0
	for i := range streams {
		if _, err := sess.Open(); err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if i%100 == 0 {
			maxGoroutines = max(maxGoroutines, runtime.NumGoroutine())
		}
	}
	// The streams the plugin resets leave the host's session; wait until
	// only those the plugin holds are left.
	deadline := time.Now().Add(20 * time.Second)
	for sess.NumStreams() > MaxStreams+backlog && time.Now().Before(deadline) {
		maxGoroutines = max(maxGoroutines, runtime.NumGoroutine())
		time.Sleep(5 * time.Millisecond)
	}
	held := sess.NumStreams()
	maxGoroutines = max(maxGoroutines, runtime.NumGoroutine())
	mem := testutil.UsedMemory()
	grown := int64(mem) - int64(baseMem)
	t.Logf("after %d streams: the plugin holds %d, %d goroutines at most (baseline %d), memory grown by %.1f MiB",
		streams, held, maxGoroutines, baseGoroutines, float64(grown)/(1<<20))
	if held > MaxStreams+backlog {
		t.Errorf("the plugin holds %d of the host's streams; want at most %d handed out and %d in the backlog", held, MaxStreams, backlog)
	}
	// A gRPC server connection waiting for its preface is one goroutine
	// or two.
	if limit := 3*MaxStreams + 50; maxGoroutines-baseGoroutines > limit {
		t.Errorf("%d goroutines above the baseline; want at most %d", maxGoroutines-baseGoroutines, limit)
	}
	if grown >= 32<<20 {
		t.Errorf("memory grew by %.1f MiB; want under 32 MiB", float64(grown)/(1<<20))
	}

	sess.Close()
	srv.Stop()
	<-served
	pmux.Close()
	plugin.Close()
	if err := goleak.Find(leaks); err != nil {
		t.Errorf("left behind after Close: %v", err)
	}
}
