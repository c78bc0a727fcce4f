package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/internal/listen"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/internal/testutil"
)

// muxPair connects a "plugin" and a "host" broker over one unix socket in
// dir, multiplexed, the way plugin.Run and host.Start do, and returns
// both brokers. Brokered sockets, if any were made, would go to dir too.
func muxPair(t testing.TB, dir string) (plugin, host *Broker) { return brokerPair(t, dir, true) }

// brokerPair is muxPair, or without mux the same pair with a socket per
// brokered connection.
func brokerPair(t testing.TB, dir string, mux bool) (plugin, host *Broker) {
	t.Helper()
	link := serveBrokerService(t, dir, mux, func(m *multiplexer) pluginpb.GRPCBrokerServer {
		plugin = newBroker(brokerwire.Options{Mux: m, Unix: listen.UnixConfig{Dir: dir}})
		return serverHandler{b: plugin}
	})
	host = newBroker(brokerwire.Options{Mux: link.hmux, Unix: listen.UnixConfig{Dir: dir}})
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := pluginpb.NewGRPCBrokerClient(link.conn).StartStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() { host.run(stream); close(ran) }()
	t.Cleanup(func() {
		host.Close()
		plugin.Close()
		cancel()
		link.conn.Close()
		<-ran
		link.stop()
	})
	return plugin, host
}

// brokerLink is a broker service served on a unix socket in a test's
// directory and a gRPC client connection to it, multiplexed or not, the
// way plugin.Run serves and host.Start dials.
type brokerLink struct {
	conn *grpc.ClientConn
	hmux *multiplexer // the host's side of the multiplexed connection, or nil
	stop func()       // stops the server and closes the muxes and the listener; after conn is closed
}

// serveBrokerService serves the broker service that svc returns (given
// the plugin's side of the mux, or nil) on a new unix socket in dir and
// connects to it.
func serveBrokerService(t testing.TB, dir string, mux bool, svc func(pmux *multiplexer) pluginpb.GRPCBrokerServer) *brokerLink {
	t.Helper()
	ln, err := testListen(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pmux, hmux *multiplexer
	mainLn := ln
	if mux {
		pmux = listenMux(ln)
		mainLn = pmux.Main()
	}
	srv := grpc.NewServer()
	pluginpb.RegisterGRPCBrokerServer(srv, svc(pmux))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(mainLn) }()

	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, ln.Addr().Network(), ln.Addr().String())
	}
	if mux {
		raw, err := net.Dial(ln.Addr().Network(), ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if hmux, err = dialMuxConn(raw); err != nil {
			t.Fatal(err)
		}
		dial = func(context.Context, string) (net.Conn, error) { return hmux.Open() }
	}
	conn, err := grpc.NewClient("passthrough:///main",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	return &brokerLink{conn: conn, hmux: hmux, stop: func() {
		srv.Stop()
		<-served
		if mux {
			hmux.Close()
			pmux.Close()
		}
		ln.Close()
	}}
}

// serveHealth serves a health service reporting status for name on id.
func serveHealth(t testing.TB, b *Broker, id uint32, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := b.Serve(ctx, id, func(s *grpc.Server) {
		h := health.NewServer()
		h.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(s, h)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkHealth dials id on b and asks for name's health.
func checkHealth(t testing.TB, b *Broker, id uint32, name string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := b.Dial(ctx, id)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: name})
	return err
}

// sockets lists the socket files under dir.
func sockets(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type()&os.ModeSocket != 0 {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestMuxCallbacksBothWays: over a multiplexed connection, a service the
// plugin serves is dialed by the host and one the host serves is dialed by
// the plugin, several at once, and not one socket is made besides the
// plugin's own, which is gone once the host has connected.
func TestMuxCallbacksBothWays(t *testing.T) {
	dir := testutil.TempDir(t)
	plugin, host := muxPair(t, dir)

	serveHealth(t, plugin, 7, "from-plugin")
	serveHealth(t, host, 8, "from-host")
	serveHealth(t, plugin, 9, "also-from-plugin")
	errs := make(chan error, 6)
	for range 2 {
		go func() { errs <- checkHealth(t, host, 7, "from-plugin") }()
		go func() { errs <- checkHealth(t, plugin, 8, "from-host") }()
		go func() { errs <- checkHealth(t, host, 9, "also-from-plugin") }()
	}
	for range 6 {
		if err := <-errs; err != nil {
			t.Errorf("brokered call: %v", err)
		}
	}
	// The service name proves each call reached the server it was meant for.
	if err := checkHealth(t, host, 9, "from-plugin"); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("service 9 answered for service 7's name: %v", err)
	}
	if left := sockets(t, dir); len(left) != 0 {
		t.Errorf("sockets besides the one connection: %v", left)
	}
}

// TestMuxRefusesUnservedID: a knock for an ID nobody serves is refused
// within the knock wait, with an error saying what the serving side must
// do, and the connection stays usable.
func TestMuxRefusesUnservedID(t *testing.T) {
	plugin, host := muxPair(t, testutil.TempDir(t))
	start := time.Now()
	err := checkHealth(t, host, 42, "x")
	if err == nil || !strings.Contains(err.Error(), "no service 42 is served") || !strings.Contains(err.Error(), "Serve or Accept") {
		t.Fatalf("dialing an unserved ID: %v", err)
	}
	if d := time.Since(start); d > knockWait+3*time.Second {
		t.Errorf("refusal took %v", d)
	}
	serveHealth(t, plugin, 43, "late")
	if err := checkHealth(t, host, 43, "late"); err != nil {
		t.Errorf("after a refusal: %v", err)
	}
}

// TestMuxKnockBeforeServe: a knock that arrives just before the serving
// side calls Serve waits for it instead of failing.
func TestMuxKnockBeforeServe(t *testing.T) {
	plugin, host := muxPair(t, testutil.TempDir(t))
	errc := make(chan error, 1)
	go func() { errc <- checkHealth(t, host, 5, "soon") }()
	time.Sleep(200 * time.Millisecond)
	serveHealth(t, plugin, 5, "soon")
	if err := <-errc; err != nil {
		t.Errorf("knock before Serve: %v", err)
	}
}

// TestMuxWithoutHost: a plugin's Mux whose host never connects fails its
// main listener's Accept once closed, instead of hanging.
func TestMuxWithoutHost(t *testing.T) {
	ln, err := testListen(testutil.TempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	m := listenMux(ln)
	errc := make(chan error, 1)
	go func() {
		_, err := m.Main().Accept()
		errc <- err
	}()
	m.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Error("Accept succeeded without a host")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits after Close")
	}
	if _, err := m.Open(); err == nil {
		t.Error("Open succeeded after Close")
	}
}

// TestMuxOneConnectionOnly: the plugin's socket takes only its host's
// connection; once it has it, the socket is closed and its file gone, so a
// second connection is refused.
func TestMuxOneConnectionOnly(t *testing.T) {
	dir := testutil.TempDir(t)
	ln, err := testListen(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := listenMux(ln)
	defer m.Close()
	first, err := net.Dial(ln.Addr().Network(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	select {
	case <-m.ready:
	case <-time.After(5 * time.Second):
		t.Fatal("the first connection was not taken")
	}
	if m.err != nil {
		t.Fatal(m.err)
	}
	if second, err := net.Dial(ln.Addr().Network(), ln.Addr().String()); err == nil {
		second.Close()
		t.Error("a second connection was accepted")
	}
	if left := sockets(t, dir); len(left) != 0 {
		t.Errorf("socket files left once the host is connected: %v", left)
	}
}

// TestMuxAbandonedKnockKeepsOrder: a Dial that gives up before the peer
// consents (the peer waits for its Serve) leaves the peer expecting a
// stream; the late consent still gets one (closed at once), so the next
// Dial's stream reaches the service it was meant for, not the abandoned
// one.
func TestMuxAbandonedKnockKeepsOrder(t *testing.T) {
	plugin, host := muxPair(t, testutil.TempDir(t))
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := host.Dial(short, 50); err == nil || !strings.Contains(err.Error(), "did not answer the knock for service 50") {
		t.Fatalf("Dial of a service served too late: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	serveHealth(t, plugin, 50, "fifty")
	time.Sleep(300 * time.Millisecond) // the late consent arrives and is answered with a stream
	serveHealth(t, plugin, 51, "fifty-one")
	for range 3 {
		if err := checkHealth(t, host, 51, "fifty-one"); err != nil {
			t.Errorf("service 51 after an abandoned knock for 50: %v", err)
		}
	}
	if err := checkHealth(t, host, 50, "fifty"); err != nil {
		t.Errorf("service 50 once served: %v", err)
	}
}

// TestMuxKnockWaitersLeaveOnTimeout: a knock waiting for its listener
// leaves the Mux's waiting list when it is answered, by Serve or by the
// timeout, so that knocks for services never served do not pile up.
func TestMuxKnockWaitersLeaveOnTimeout(t *testing.T) {
	plugin, _ := muxPair(t, testutil.TempDir(t))
	m := plugin.mux
	answers := make(chan string, 4)
	for _, id := range []uint32{61, 62, 63, 64} {
		m.admit(id, func(refusal string) { answers <- fmt.Sprintf("%d:%s", id, refusal) })
	}
	m.mu.Lock()
	n := len(m.waiting)
	m.mu.Unlock()
	if n != 4 {
		t.Fatalf("%d knocks waiting; want 4", n)
	}
	serveHealth(t, plugin, 62, "sixty-two")
	got := map[string]bool{}
	for range 4 {
		select {
		case a := <-answers:
			got[a] = true
		case <-time.After(knockWait + 5*time.Second):
			t.Fatalf("answers so far %v; the others never came", got)
		}
	}
	if !got["62:"] {
		t.Errorf("the knock for the service served meanwhile was not admitted: %v", got)
	}
	for _, id := range []string{"61", "63", "64"} {
		if !got[id+":no service "+id+" is served on this side of the connection (the serving side must call Serve or Accept before the ID is dialed)"] {
			t.Errorf("the knock for unserved service %s was not refused: %v", id, got)
		}
	}
	m.mu.Lock()
	n = len(m.waiting)
	m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d knocks still waiting once all were answered", n)
	}
}

// testListen listens where a plugin would: on a new unix socket in dir,
// or on loopback TCP on Windows (dir unused), as listen.Plugin chooses.
func testListen(dir string) (net.Listener, error) {
	if !osdep.UnixSockets {
		return listen.TCP(0, 0)
	}
	return listen.Unix(listen.UnixConfig{Dir: dir})
}
