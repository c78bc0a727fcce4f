package plugin_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testpki"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

// stallHandshakes opens n connections to addr that send the 5-byte
// header of a TLS record and nothing more, and returns them.
func stallHandshakes(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection to %s: %v", addr, err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write([]byte{0x16, 0x03, 0x01, 0x00, 0xc8}); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return conns
}

// Issue 19 point 3: 300 stalled TLS handshakes kept a SIGTERM'd service
// alive past its drain timeout. The service must exit within the drain
// timeout plus 1 s, even with a call that outlives the drain.
func TestServiceExitsWithinDrainDespiteStalledHandshakes(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	const drain = 2 * time.Second
	env := pki.ServiceEnv("127.0.0.1:0")
	env[plugin.EnvDrainTimeout] = drain.String()
	addr, healthAddr, stop := remotetest.StartProbed(t, env, "one", plugin.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A call that outlives the drain: the hard stop at the deadline ends it.
	cc := dialTLS(t, addr, pki.HostTLS())
	slow := make(chan error, 1)
	go func() {
		_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{ResponseSize: 20000})
		slow <- err
	}()
	stallHandshakes(t, addr, 300)
	stallHandshakes(t, healthAddr, 50)
	time.Sleep(300 * time.Millisecond) // the slow call is in its handler

	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	took := time.Since(start)
	t.Logf("exit %v after the stop, with 350 stalled handshakes and a 20 s call; drain timeout %v", took.Round(time.Millisecond), drain)
	if took > drain+time.Second {
		t.Fatalf("the service took %v to exit after the stop; the drain timeout is %v (bound: drain + 1 s)", took, drain)
	}
	select {
	case err := <-slow:
		if err == nil {
			t.Fatal("the 20 s call succeeded: it should have been stopped at the drain deadline")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call that outlived the drain never ended")
	}
}

// h2Flood speaks raw HTTP/2 to a plain-text gRPC port, ignoring the
// server's limits as a hostile client would.
type h2Flood struct {
	mu   sync.Mutex // over writes
	conn net.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	henc *hpack.Encoder
	pong chan struct{}
	done chan struct{}
}

func dialH2Flood(t *testing.T, addr string) *h2Flood {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f := &h2Flood{conn: c, pong: make(chan struct{}, 1), done: make(chan struct{})}
	f.henc = hpack.NewEncoder(&f.hbuf)
	f.fr = http2.NewFramer(c, c)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := f.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// Read and drop what the server says, noting PING acknowledgements.
	rd := http2.NewFramer(io.Discard, c)
	go func() {
		defer close(f.done)
		for {
			fr, err := rd.ReadFrame()
			if err != nil {
				return
			}
			p, ok := fr.(*http2.PingFrame)
			switch {
			case ok && p.IsAck():
				select {
				case f.pong <- struct{}{}:
				default:
				}
			case ok:
				f.mu.Lock()
				f.fr.WritePing(true, p.Data)
				f.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { c.Close(); <-f.done })
	return f
}

// call opens stream id with one request message of method.
func (f *h2Flood) call(id uint32, method string, msg []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hbuf.Reset()
	for _, hf := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", method}, {":authority", "x"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		f.henc.WriteField(hpack.HeaderField{Name: hf[0], Value: hf[1]})
	}
	if err := f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: f.hbuf.Bytes(), EndHeaders: true}); err != nil {
		return err
	}
	data := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(data[1:], uint32(len(msg)))
	copy(data[5:], msg)
	return f.fr.WriteData(id, true, data)
}

// sync waits until the server has read everything sent before it.
func (f *h2Flood) sync(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	err := f.fr.WritePing(false, [8]byte{1})
	f.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.pong:
	case <-f.done:
		t.Fatal("the server closed the connection")
	case <-time.After(30 * time.Second):
		t.Fatal("no PING acknowledgement in 30 s")
	}
}

func heapInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// heapLive is the heap's live data as of the last garbage collection.
func heapLive() uint64 { return metricValue("/gc/heap/live:bytes") }

// metricValue reads one of runtime/metrics' counters.
func metricValue(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Issue 19 point 3: 20,000 Health/Watch streams on one connection of the
// plain health port made 40,009 goroutines and 323 MiB. Streams per
// connection and connections are capped.
func TestServiceHealthPortWatchFloodBounded(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	_, healthAddr, stop := remotetest.StartProbed(t, pki.ServiceEnv("127.0.0.1:0"), "one", plugin.Config{})

	runtime.GC()
	baseG, baseHeap := runtime.NumGoroutine(), heapInuse()
	req, err := proto.Marshal(&healthpb.HealthCheckRequest{Service: wire.HealthService})
	if err != nil {
		t.Fatal(err)
	}
	f := dialH2Flood(t, healthAddr)
	const streams = 20000
	for i := range streams {
		if err := f.call(uint32(2*i+1), healthpb.Health_Watch_FullMethodName, req); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	f.sync(t)
	// And more connections than the health port takes, each with a
	// Watch of its own.
	var conns []*h2Flood
	for range 100 {
		conns = append(conns, dialH2Flood(t, healthAddr))
	}
	for _, c := range conns {
		if err := c.call(1, healthpb.Health_Watch_FullMethodName, req); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	g, heap := runtime.NumGoroutine(), heapInuse()
	t.Logf("after %d Watch streams on one connection and 100 more connections: %d goroutines (baseline %d), heap in use %d MiB (baseline %d MiB)",
		streams, g, baseG, heap>>20, baseHeap>>20)
	// The service's share: the health port takes 64 connections (3
	// goroutines each: reader, writer, keepalive) and 8 streams on each
	// (2 goroutines per Watch), here 8 + 63; the flood's 101 readers are
	// the test's own. Before the caps: 40,009.
	const bound = 64*3 + (8+63)*2 + 50
	if service := g - baseG - len(conns) - 1; service > bound {
		t.Errorf("%d service goroutines above the baseline, want at most %d: the health port's streams or connections are not capped", service, bound)
	}
	if heap > 64<<20 {
		t.Errorf("heap in use %d MiB, want under 64 MiB", heap>>20)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// testService serves svc as version 1.
func testService(svc testgrpc.TestServiceServer) map[int]plugin.Register {
	return map[int]plugin.Register{1: func(s *grpc.Server, _ *broker.Broker) error {
		testgrpc.RegisterTestServiceServer(s, svc)
		return nil
	}}
}

// holdingService holds each UnaryCall's request until all the calls of
// the load hold theirs, or for hold: without a budget, the whole load is
// in memory at once.
type holdingService struct {
	testgrpc.UnimplementedTestServiceServer
	n       int32
	hold    time.Duration
	holding atomic.Int32
	all     chan struct{}
	once    sync.Once
}

func (s *holdingService) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if s.holding.Add(1) == s.n {
		s.once.Do(func() { close(s.all) })
	}
	defer s.holding.Add(-1)
	select {
	case <-s.all:
	case <-time.After(s.hold):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &testgrpc.SimpleResponse{Payload: &testgrpc.Payload{Body: []byte(strconv.Itoa(len(req.GetPayload().GetBody())))}}, nil
}

// loadClients is the role of the test binary that sends the 8x60 MiB
// load from its own process, so that the service's heap is measured
// alone: n connections, each one UnaryCall whose request carries size
// bytes; one status code and message per line.
func loadClients() {
	cert, err := tls.LoadX509KeyPair(os.Getenv("LOAD_CERT"), os.Getenv("LOAD_KEY"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	caPEM, _ := os.ReadFile(os.Getenv("LOAD_CA"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	n, _ := strconv.Atoi(os.Getenv("LOAD_N"))
	size, _ := strconv.Atoi(os.Getenv("LOAD_SIZE"))
	body := make([]byte, size)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range n {
		cc, err := grpc.NewClient("passthrough:///"+os.Getenv("LOAD_ADDR"),
			grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12})),
			grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(size+1<<20)))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		wg.Go(func() {
			defer cc.Close()
			_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: body}})
			mu.Lock()
			fmt.Println(status.Code(err), strings.ReplaceAll(status.Convert(err).Message(), "\n", " "))
			mu.Unlock()
		})
	}
	wg.Wait()
	os.Exit(0)
}

// Issue 19 point 3: eight authenticated clients each sending one 60 MiB
// message took the service to 1.01 GB. With the default memory budget of
// 256 MiB, the service's live heap (as of each garbage collection) stays
// under the budget plus the stated margin: twice the maximum message size,
// for gRPC's buffer pools, which keep the wire buffers and the contiguous
// copy of the last message read until the next collections, plus 32 MiB
// for the rest of the process. (The heap in use, which the garbage
// collector lets grow to twice the live data, is logged.) Under the race
// detector the load is scaled down by 4 (15 MiB messages, a 16 MiB
// maximum, a 64 MiB budget). The bound holds too for a service with its
// own credentials (grpc.Creds in Config.ServerOptions), through which
// the budget cannot see the messages' sizes (issue 42, h-creds).
func TestServiceInflightBudgetBoundsMemory(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("service TLS", func(t *testing.T) { budgetBoundsMemory(t, pki, plugin.Config{}) })
	t.Run("own credentials", func(t *testing.T) {
		budgetBoundsMemory(t, pki, plugin.Config{ServerOptions: []grpc.ServerOption{grpc.Creds(credentials.NewTLS(serviceTLS(t, pki)))}})
	})
}

func budgetBoundsMemory(t *testing.T, pki *remotetest.PKI, cfg plugin.Config) {
	budget, size := int64(plugin.DefaultMaxInflightBytes), 60<<20
	env := pki.ServiceEnv("127.0.0.1:0")
	if raceDetector {
		budget, size, cfg.MaxMessageSize = budget/4, size/4, wire.DefaultMaxMessageSize/4
		env[plugin.EnvMaxInflightBytes] = strconv.FormatInt(budget, 10)
	}
	maxMsg := int64(wire.DefaultMaxMessageSize)
	if cfg.MaxMessageSize != 0 {
		maxMsg = int64(cfg.MaxMessageSize)
	}
	margin := 2*maxMsg + 32<<20
	svc := &holdingService{n: 8, hold: 300 * time.Millisecond, all: make(chan struct{})}
	cfg.Versions = testService(svc)
	addr, _ := runService(t, env, cfg)

	runtime.GC()
	base, baseLive := heapInuse(), heapLive()
	var peak, peakLive uint64
	sampling, stopSampling := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampling)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			peak, peakLive = max(peak, heapInuse()), max(peakLive, heapLive())
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), "PLUGKIT_PLUGIN_TEST_ROLE=load-clients", "LOAD_ADDR="+addr,
		"LOAD_CERT="+pki.HostCert, "LOAD_KEY="+pki.HostKey, "LOAD_CA="+pki.CAFile,
		"LOAD_N=8", "LOAD_SIZE="+strconv.Itoa(size))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	close(stopSampling)
	<-sampling
	if err != nil {
		t.Fatalf("load: %v\n%s", err, stderr.String())
	}
	ok, exhausted := 0, 0
	for line := range strings.Lines(string(out)) {
		switch code, msg, _ := strings.Cut(strings.TrimSpace(line), " "); code {
		case codes.OK.String():
			ok++
		case codes.ResourceExhausted.String():
			exhausted++
			if !strings.Contains(msg, plugin.EnvMaxInflightBytes) {
				t.Errorf("a refused call's message does not say what to do: %q", msg)
			}
		default:
			t.Errorf("a call ended %s %s; want OK or ResourceExhausted", code, msg)
		}
	}
	growth, live := int64(peak)-int64(base), int64(peakLive)-int64(baseLive)
	t.Logf("8 x %d MiB: %d served, %d refused; the service's live heap peaked %d MiB above its baseline (budget %d MiB, bound %d MiB), its heap in use %d MiB",
		size>>20, ok, exhausted, live>>20, budget>>20, (budget+margin)>>20, growth>>20)
	if ok+exhausted != 8 || ok == 0 {
		t.Fatalf("%d served and %d refused of 8 calls", ok, exhausted)
	}
	if live > budget+margin {
		t.Fatalf("the service's live heap grew %d MiB, above the budget %d MiB plus the margin %d MiB", live>>20, budget>>20, margin>>20)
	}
}

// secretVolume lays files out as the kubelet mounts a Secret: each name a
// symlink into ..data, itself a symlink to a timestamped directory, so
// that an update is one rename.
type secretVolume struct {
	dir string
	gen int
}

func (v *secretVolume) path(name string) string { return filepath.Join(v.dir, name) }

func (v *secretVolume) write(t *testing.T, files map[string][]byte) {
	t.Helper()
	v.gen++
	gen := fmt.Sprintf("..gen_%d", v.gen)
	if err := os.Mkdir(filepath.Join(v.dir, gen), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(v.dir, gen, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(v.path(name)); err != nil {
			if err := os.Symlink(filepath.Join("..data", name), v.path(name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(gen, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// Issue 19 point 5: certificate rotation in service mode while calls are
// in flight, done as the kubelet updates a mounted Secret (one symlink
// swap). The calls and the health watch of connections made before the
// rotation carry on; new connections get the new certificate and must
// present one of the new CA; a host of the old CA is refused, even with
// a TLS session ticket from before the rotation.
func TestServiceRotationWithCallsInFlight(t *testing.T) {
	testutil.NotOnWindows(t, "it lays out a Kubernetes secret volume, symbolic links swapped by a rename, as Linux's kubelet does")
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr, vol := runServiceFromSecretVolume(t, pki)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ca2, err := testpki.NewCA("rotated CA")
	if err != nil {
		t.Fatal(err)
	}
	// The old host trusts both CAs, as during a CA rotation, and keeps
	// its TLS sessions.
	sessions := tls.NewLRUClientSessionCache(8)
	oldTLS := func() *tls.Config {
		c := pki.HostTLS()
		c.RootCAs.AppendCertsFromPEM(ca2.PEM())
		c.ClientSessionCache = sessions
		return c
	}
	old := dialTLS(t, addr, oldTLS())
	watch, err := healthpb.NewHealthClient(old).Watch(ctx, &healthpb.HealthCheckRequest{Service: wire.HealthService})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("watch: %v, %v", r, err)
	}
	const inflight = 5
	results := startCallsInFlight(ctx, old, inflight)
	time.Sleep(200 * time.Millisecond)

	srv2, _ := ca2.Issue("rotated service", "127.0.0.1")
	host2, _ := ca2.Issue("rotated host")
	host2Cert, _ := host2.TLS()
	vol.write(t, map[string][]byte{"tls.crt": srv2.CertPEM, "tls.key": srv2.KeyPEM, "ca.crt": ca2.PEM()})

	newTLS := &tls.Config{Certificates: []tls.Certificate{host2Cert}, RootCAs: ca2.Pool(), MinVersion: tls.VersionTLS12}
	cc := dialUntilServed(ctx, t, addr, newTLS)
	// The calls in flight across the rotation finish; the old
	// connection still serves calls.
	for range inflight {
		select {
		case err := <-results:
			if err != nil {
				t.Fatalf("a call in flight across the rotation failed: %v", err)
			}
		case <-ctx.Done():
			t.Fatal("the calls in flight never finished")
		}
	}
	if _, err := testgrpc.NewTestServiceClient(old).EmptyCall(ctx, &testgrpc.Empty{}); err != nil {
		t.Fatalf("the connection made before the rotation lost its session: %v", err)
	}
	// A host of the old CA cannot make a new connection, session ticket
	// or not.
	oldNew := dialTLS(t, addr, oldTLS())
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	defer ccancel()
	if _, err := testgrpc.NewTestServiceClient(oldNew).EmptyCall(cctx, &testgrpc.Empty{}); err == nil {
		t.Fatal("a new connection of a host of the old CA was served after the rotation")
	}
	if _, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
		t.Fatalf("a call with the rotated certificates: %v", err)
	}
}

// runServiceFromSecretVolume runs the service with its certificate, key
// and client CA (pki's) read from a secretVolume, which it returns for the
// test to rotate, with the service's address.
func runServiceFromSecretVolume(t *testing.T, pki *remotetest.PKI) (string, *secretVolume) {
	t.Helper()
	read := func(f string) []byte {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	vol := &secretVolume{dir: testutil.TempDir(t)}
	vol.write(t, map[string][]byte{"tls.crt": read(pki.ServerCert), "tls.key": read(pki.ServerKey), "ca.crt": read(pki.CAFile)})
	env := map[string]string{
		plugin.EnvListen: "127.0.0.1:0", plugin.EnvTLSCert: vol.path("tls.crt"),
		plugin.EnvTLSKey: vol.path("tls.key"), plugin.EnvTLSClientCA: vol.path("ca.crt"),
	}
	addr, _ := runService(t, env, plugin.Config{})
	return addr, vol
}

// startCallsInFlight starts n UnaryCalls on cc, each asking for a 3000-byte
// response, and returns where each one's result arrives: nil for the
// answer of runService's test service ("one").
func startCallsInFlight(ctx context.Context, cc *grpc.ClientConn, n int) <-chan error {
	results := make(chan error, n)
	for range n {
		go func() {
			resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{ResponseSize: 3000})
			if err == nil && string(resp.GetPayload().GetBody()) != "one" {
				err = errors.New("wrong answer")
			}
			results <- err
		}()
	}
	return results
}

// dialUntilServed dials addr with tc until an EmptyCall on the connection
// succeeds, for at most 10 s, and returns that connection.
func dialUntilServed(ctx context.Context, t *testing.T, addr string, tc *tls.Config) *grpc.ClientConn {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		cc := dialTLS(t, addr, tc)
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		_, err := testgrpc.NewTestServiceClient(cc).EmptyCall(cctx, &testgrpc.Empty{})
		ccancel()
		if err == nil {
			return cc
		}
		cc.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a host of the rotated CA is not served 10 s after the rotation: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Issue 19 point 3: a connection's handshake is bounded in time
// (PLUGKIT_HANDSHAKE_TIMEOUT) on both ports, and the connections in their
// handshake are capped (PLUGKIT_MAX_HANDSHAKES): 96 stalled handshakes
// cost the service no more than the cap in goroutines, are dropped after
// the timeout, and a host gets through once they are.
func TestServiceHandshakeTimeoutAndCap(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	const maxHandshakes = 4
	env := pki.ServiceEnv("127.0.0.1:0")
	env[plugin.EnvHandshakeTimeout] = "200ms"
	env[plugin.EnvMaxHandshakes] = strconv.Itoa(maxHandshakes)
	addr, healthAddr, _ := remotetest.StartProbed(t, env, "one", plugin.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	time.Sleep(100 * time.Millisecond) // the servers' goroutines started
	base := runtime.NumGoroutine()
	stalled := append(stallHandshakes(t, addr, 48), stallHandshakes(t, healthAddr, 48)...)
	time.Sleep(100 * time.Millisecond)
	// A goroutine per connection in its handshake, per port.
	if g := runtime.NumGoroutine() - base; g > 2*maxHandshakes+4 {
		t.Errorf("%d goroutines for 96 stalled handshakes, want at most %d: the handshakes are not capped", g, 2*maxHandshakes+4)
	}
	// Each is dropped by the service: 12 rounds of 4 handshakes of 200 ms
	// per port.
	for i, c := range stalled {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		// (The plain port sends its HTTP/2 settings first.)
		if _, err := io.Copy(io.Discard, c); isTimeout(err) {
			t.Fatalf("stalled connection %d: read %v; want the service to drop it after its handshake timeout", i, err)
		}
	}
	cc := dialTLS(t, addr, pki.HostTLS())
	if st, _, err := health(ctx, cc); err != nil || st != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("a host after the stalled handshakes: %v, %v", st, err)
	}
}

func TestServiceLimitsFromEnvironment(t *testing.T) {
	versions := map[int]plugin.Register{1: (&remotetest.TestService{}).Register}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{plugin.EnvHandshakeTimeout: "soon"}, plugin.EnvHandshakeTimeout},
		{map[string]string{plugin.EnvMaxConnections: "0"}, plugin.EnvMaxConnections},
		{map[string]string{plugin.EnvMaxHandshakes: "-1"}, plugin.EnvMaxHandshakes},
		{map[string]string{plugin.EnvMaxStreams: "many"}, plugin.EnvMaxStreams},
		{map[string]string{plugin.EnvMaxInflightBytes: "1GiB"}, plugin.EnvMaxInflightBytes},
		{map[string]string{plugin.EnvMaxInflightBytes: strconv.Itoa(3*wire.DefaultMaxMessageSize - 1)}, "three times the maximum message size"},
	} {
		env := map[string]string{plugin.EnvListen: "127.0.0.1:0", plugin.EnvInsecureLoopback: "1"}
		for k, v := range tc.env {
			env[k] = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := plugin.RunIn(ctx, plugin.Config{Versions: versions}, plugin.Harness{LookupEnv: remotetest.Lookup(env), KeepStdio: true})
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: Run = %v, want an error mentioning %q", tc.env, err, tc.want)
		}
	}
}

// budgetService holds a UnaryCall's request until release is closed when
// the call asks for it (ResponseSize 1), and sums a client stream.
type budgetService struct {
	testgrpc.UnimplementedTestServiceServer
	held    chan struct{}
	release chan struct{}
}

func (s *budgetService) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if req.GetResponseSize() == 1 {
		s.held <- struct{}{}
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &testgrpc.SimpleResponse{}, nil
}

func (s *budgetService) StreamingInputCall(stream grpc.ClientStreamingServer[testgrpc.StreamingInputCallRequest, testgrpc.StreamingInputCallResponse]) error {
	total := 0
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			return stream.SendAndClose(&testgrpc.StreamingInputCallResponse{AggregatedPayloadSize: int32(total)})
		}
		if err != nil {
			return err
		}
		total += len(m.GetPayload().GetBody())
	}
}

// Issue 19 point 3: calls beyond the in-flight budget get
// ResourceExhausted, with a message that says what to do; the budget
// comes back when the requests are let go; a client stream waiting for
// its client holds no room, and its messages count one at a time.
func TestServiceInflightBudgetRefusesAndReleases(t *testing.T) {
	const maxMsg = 4 << 20
	env := map[string]string{plugin.EnvListen: "127.0.0.1:0", plugin.EnvInsecureLoopback: "1",
		plugin.EnvMaxInflightBytes: strconv.Itoa(3 * maxMsg)} // room to read one message
	svc := &budgetService{held: make(chan struct{}, 3), release: make(chan struct{})}
	addr, _ := runService(t, env, plugin.Config{MaxMessageSize: maxMsg, Versions: testService(svc)})
	// A bound, not a figure: at load 30 the three parts took over 20 s.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(maxMsg)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := testgrpc.NewTestServiceClient(cc)

	budgetRefusesThenReleases(ctx, t, client, svc)
	idleStreamHoldsNoRoom(ctx, t, client)
	streamMessagesCountOneAtATime(ctx, t, client)
}

// budgetRefusesThenReleases fills the budget (three maximum messages of
// 4 MiB, 12 MiB) with calls svc holds, checks that a call beyond it is refused with a
// message saying what to do, and that calls are served again once svc
// lets the held ones go.
func budgetRefusesThenReleases(ctx context.Context, t *testing.T, client testgrpc.TestServiceClient, svc *budgetService) {
	t.Helper()
	// Two requests of (nearly) 3 MiB held by their handlers leave 6 MiB; a
	// third needs 9 (three copies while read) and waits; then the requests
	// in flight and waiting take the whole budget, and new calls are
	// refused.
	held := make(chan error, 3)
	call := func(size int, hold bool) {
		req := &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: make([]byte, size)}}
		if hold {
			req.ResponseSize = 1
		}
		_, err := client.UnaryCall(ctx, req)
		held <- err
	}
	for range 2 {
		go call(3<<20-4096, true)
		select {
		case <-svc.held:
		case err := <-held:
			t.Fatalf("a held call ended: %v", err)
		}
	}
	go call(3<<20, false)
	for {
		// A probe that comes while the third request is still being read
		// may wait for room instead of being refused (seen under Wine and
		// on a loaded machine): it gets a deadline of its own, and the
		// next probe tries again.
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := client.UnaryCall(pctx, &testgrpc.SimpleRequest{})
		pcancel()
		if status.Code(err) == codes.DeadlineExceeded && ctx.Err() == nil {
			continue
		}
		if status.Code(err) == codes.ResourceExhausted {
			if !strings.Contains(err.Error(), plugin.EnvMaxInflightBytes) || !strings.Contains(err.Error(), "retry") {
				t.Fatalf("a call beyond the budget: %v; want a message saying to retry or raise %s", err, plugin.EnvMaxInflightBytes)
			}
			break
		}
		if err != nil {
			t.Fatalf("a call while the budget fills: %v; want success or ResourceExhausted", err)
		}
		if ctx.Err() != nil {
			t.Fatal("no call was refused while the budget was taken")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(svc.release)
	for range 3 {
		if err := <-held; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
		t.Fatalf("a call after the held requests were let go: %v", err)
	}
}

// idleStreamHoldsNoRoom: a client stream whose handler waits for a
// message that does not come holds no room: other calls go on.
func idleStreamHoldsNoRoom(ctx context.Context, t *testing.T, client testgrpc.TestServiceClient) {
	t.Helper()
	idle, err := client.StreamingInputCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.Send(&testgrpc.StreamingInputCallRequest{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: make([]byte, 1<<20)}}); err != nil {
			t.Fatalf("call %d beside an idle client stream: %v", i, err)
		}
	}
	if _, err := idle.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
}

// streamMessagesCountOneAtATime sends 20 messages of 3 MiB, four times the
// budget in all, on one client stream: each message counts against the
// budget only while it is read, so the stream is served whole, and a call
// after it is served too.
func streamMessagesCountOneAtATime(ctx context.Context, t *testing.T, client testgrpc.TestServiceClient) {
	t.Helper()
	stream, err := client.StreamingInputCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 3<<20)
	for i := range 20 {
		if err := stream.Send(&testgrpc.StreamingInputCallRequest{Payload: &testgrpc.Payload{Body: body}}); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil || resp.GetAggregatedPayloadSize() != 20*3<<20 {
		t.Fatalf("client stream: %v, %v", resp, err)
	}
	if _, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
		t.Fatalf("a call after the stream: %v", err)
	}
}

// A service whose ServerOptions bring their own transport credentials
// (grpc.Creds, which win over the service's) still serves: the in-flight
// budget, whose frame sniffer then cannot read the client's frames, counts
// each message at its largest instead of waiting for sizes that never come.
func TestServiceBudgetWithOwnCredentials(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	own := grpc.Creds(credentials.NewTLS(serviceTLS(t, pki)))
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"service TLS", pki.ServiceEnv("127.0.0.1:0")},
		{"plain service", map[string]string{plugin.EnvListen: "127.0.0.1:0", plugin.EnvInsecureLoopback: "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := runService(t, tc.env, plugin.Config{ServerOptions: []grpc.ServerOption{own}, Versions: testService(&budgetService{})})
			cc := dialTLS(t, addr, pki.HostTLS())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			client := testgrpc.NewTestServiceClient(cc)
			if _, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: make([]byte, 100<<10)}}); err != nil {
				t.Fatalf("a unary call: %v", err)
			}
			stream, err := client.StreamingInputCall(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := stream.Send(&testgrpc.StreamingInputCallRequest{Payload: &testgrpc.Payload{Body: make([]byte, 1<<10)}}); err != nil {
					t.Fatal(err)
				}
			}
			if resp, err := stream.CloseAndRecv(); err != nil || resp.GetAggregatedPayloadSize() != 3<<10 {
				t.Fatalf("a client stream: %v, %v; want its 3 KiB read", resp, err)
			}
		})
	}
}
