package faults_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/automtls"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/wire"
)

func store(c *host.Client) objectstorev1.ObjectStoreClient {
	return objectstorev1.NewObjectStoreClient(c.Conn())
}

// closeQuickly closes c and fails t when Close errs or takes longer than d.
func closeQuickly(t *testing.T, c *host.Client, d time.Duration) {
	t.Helper()
	begin := time.Now()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if took := time.Since(begin); took > d {
		t.Errorf("Close took %v, want under %v", took, d)
	}
}

// closeCrashed closes c, whose plugin died on its own, and fails t unless
// Close reports that death (with state in its exit status) within d.
func closeCrashed(t *testing.T, c *host.Client, state string, d time.Duration) {
	t.Helper()
	begin := time.Now()
	var ue *host.ExitError
	if err := c.Close(); !errors.As(err, &ue) || !ue.InUse || !strings.Contains(ue.State, state) {
		t.Errorf("Close = %v, want an ExitError (InUse) with %q", err, state)
	}
	if took := time.Since(begin); took > d {
		t.Errorf("Close took %v, want under %v", took, d)
	}
}

// nothingLeftIn checks that dir is empty after a plugin that died without
// cleaning up was closed: the host removes the dead plugin's socket and
// private directory, and its own brokered sockets.
func nothingLeftIn(t *testing.T, dir string, c *host.Client) {
	t.Helper()
	for _, e := range entries(dir) {
		t.Errorf("left in the socket directory after the dead plugin %d was closed: %s", c.Pid(), e)
	}
}

func TestCrashMidCall(t *testing.T) {
	dir := socketDir(t)
	var logs syncBuffer
	c := start(t, config(t, "serve", dir, &logs))
	_, err := store(c).Exists(ctxT(t, 10*time.Second), &objectstorev1.ExistsRequest{Key: "crash"})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("call to a plugin that crashed in it: %v, want Unavailable", err)
	}
	select {
	case <-c.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("the crashed plugin was not reaped")
	}
	if !waitFor(5*time.Second, func() bool { return strings.Contains(logs.String(), "deliberate crash mid-call") }) {
		t.Errorf("the plugin's panic did not reach the host's log:\n%.2000s", logs.String())
	}
	if !strings.Contains(logs.String(), `"level":"ERROR","msg":"panic: deliberate crash mid-call"`) {
		t.Errorf("the panic was not logged as an error")
	}
	if _, err := store(c).Exists(ctxT(t, 2*time.Second), &objectstorev1.ExistsRequest{Key: "yes"}); err == nil {
		t.Error("a call after the crash succeeded")
	}
	closeCrashed(t, c, "exit status 2", time.Second)
	nothingRunning(t)
	nothingLeftIn(t, dir, c) // the plugin could not remove its socket; the host did
}

func TestCrashMidStream(t *testing.T) {
	dir := socketDir(t)
	var logs syncBuffer
	c := start(t, config(t, "serve", dir, &logs))
	stream, err := store(c).Get(ctxT(t, 10*time.Second), &objectstorev1.GetRequest{Key: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		msg, err := stream.Recv()
		if err == nil {
			got = append(got, string(msg.GetChunk()))
			continue
		}
		// Nothing lost, nothing invented: the chunks sent, then an error,
		// never a clean end of a truncated stream.
		if errors.Is(err, io.EOF) || status.Code(err) != codes.Unavailable {
			t.Errorf("stream ended with %v, want Unavailable", err)
		}
		break
	}
	if strings.Join(got, ",") != "chunk 0,chunk 1" {
		t.Errorf("received %q before the crash", got)
	}
	select {
	case <-c.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("the crashed plugin was not reaped")
	}
	closeCrashed(t, c, "exit status 2", time.Second)
	nothingRunning(t)
	nothingLeftIn(t, dir, c)
}

func TestHangingCall(t *testing.T) {
	dir := socketDir(t)
	var logs syncBuffer
	cfg := config(t, "serve", dir, &logs)
	cfg.Timeouts.Stop = 500 * time.Millisecond
	c := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	begin := time.Now()
	_, err := store(c).Exists(ctx, &objectstorev1.ExistsRequest{Key: "hang"})
	cancel()
	if took := time.Since(begin); took > time.Second {
		t.Errorf("the caller's 200 ms deadline returned after %v", took)
	}
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("hung call: %v, want DeadlineExceeded", err)
	}
	if _, err := store(c).Exists(ctxT(t, 5*time.Second), &objectstorev1.ExistsRequest{Key: "yes"}); err != nil {
		t.Errorf("a call beside the hung one: %v", err)
	}
	// The plugin's graceful stop waits for the hung handler up to its own
	// 1.5 s, then stops hard; Close's steps bound it regardless.
	closeQuickly(t, c, 2*cfg.Timeouts.Stop+time.Second)
	nothingRunning(t)
	emptyDir(t, dir)
}

func TestStartFailures(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		timeout time.Duration
		want    []string
		is      error
		within  time.Duration
	}{
		{mode: "silent", timeout: 300 * time.Millisecond, want: []string{"no complete handshake line within 300ms"}, within: 2 * time.Second},
		{mode: "garbage", want: []string{"bad handshake line", "Welcome to my plugin!"}, within: 3 * time.Second},
		{mode: "exit", want: []string{"exited before its handshake", "exit status 3", "cannot open /etc/faulty.conf"}, within: 3 * time.Second},
		{mode: "notserving", is: host.ErrNotServing, within: 3 * time.Second},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := socketDir(t)
			var logs syncBuffer
			cfg := config(t, tc.mode, dir, &logs)
			if tc.timeout > 0 {
				cfg.Timeouts.Start = tc.timeout
			}
			before := measure()
			begin := time.Now()
			c, err := host.Start(ctxT(t, 20*time.Second), cfg.Command, cfg.Options)
			took := time.Since(begin)
			if err == nil {
				c.Close()
				t.Fatal("Start succeeded")
			}
			if l := lacks(err.Error(), tc.want...); len(l) > 0 {
				t.Errorf("error lacks %q:\n%v", l, err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error is not %v: %v", tc.is, err)
			}
			if took > tc.within {
				t.Errorf("Start failed after %v, want within %v", took, tc.within)
			}
			nothingRunning(t)
			emptyDir(t, dir)
			if !waitFor(2*time.Second, func() bool { return runtime.NumGoroutine() <= before.goroutines }) {
				t.Errorf("goroutines: %d before Start, %d after it failed", before.goroutines, runtime.NumGoroutine())
			}
			if n := fdCount(os.Getpid()); n > before.fds {
				t.Errorf("open files: %d before Start, %d after it failed", before.fds, n)
			}
		})
	}
}

// countingHandler counts the flood's records and keeps the others.
type countingHandler struct {
	flood  atomic.Int64
	done   atomic.Value
	others syncBuffer
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	switch {
	case strings.HasPrefix(r.Message, "flood done"):
		h.done.Store(r.Message)
	case strings.HasPrefix(r.Message, "flood "):
		h.flood.Add(1)
	default:
		fmt.Fprintf(&h.others, "%s %s\n", r.Level, r.Message)
	}
	return nil
}

func TestStderrFlood(t *testing.T) {
	const mib = 100
	dir := socketDir(t)
	cfg := config(t, "serve", dir, &syncBuffer{})
	h := &countingHandler{}
	cfg.Logger = slog.New(h)
	c := start(t, cfg)
	base := measure()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	if _, err := store(c).Init(ctxT(t, 5*time.Second), &objectstorev1.InitRequest{Config: map[string]string{"flood": fmt.Sprint(mib)}}); err != nil {
		t.Fatal(err)
	}
	calls := 0
	deadline := time.Now().Add(40 * time.Second)
	for h.done.Load() == nil && time.Now().Before(deadline) {
		if _, err := store(c).Exists(ctxT(t, 5*time.Second), &objectstorev1.ExistsRequest{Key: "yes"}); err != nil {
			t.Fatalf("call during the flood: %v", err)
		}
		calls++
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	done, _ := h.done.Load().(string)
	if done == "" {
		t.Fatalf("the flood did not finish in time (%d lines so far)", h.flood.Load())
	}
	var lines int64
	fmt.Sscanf(done, "flood done %d lines", &lines)
	if h.flood.Load() != lines || lines < mib*1000 {
		t.Errorf("%d flood lines logged, the plugin wrote %d: lines were lost", h.flood.Load(), lines)
	}
	if grew := int64(peak.Load()) - int64(base.heap); grew > 32<<20 {
		t.Errorf("host heap grew by %d MiB during a %d MiB flood", grew>>20, mib)
	}
	t.Logf("%d MiB flood: %d lines logged, %d calls meanwhile, heap peak %d MiB over a %d MiB baseline", mib, lines, calls, (peak.Load()-min(peak.Load(), base.heap))>>20, base.heap>>20)
	closeQuickly(t, c, time.Second)
	nothingRunning(t)
	emptyDir(t, dir)
}

func TestHostileLines(t *testing.T) {
	dir := socketDir(t)
	var logs syncBuffer
	c := start(t, config(t, "serve", dir, &logs))
	if _, err := store(c).Init(ctxT(t, 10*time.Second), &objectstorev1.InitRequest{Config: map[string]string{"hostile": "1"}}); err != nil {
		t.Fatal(err)
	}
	// fd 2 directly, and os.Stdout/os.Stderr through the stdio stream.
	if !waitFor(10*time.Second, func() bool { return strings.Count(logs.String(), "hostile done on") >= 3 }) {
		t.Fatalf("the hostile lines did not all arrive:\n%.3000s", logs.String())
	}
	if _, err := store(c).Exists(ctxT(t, 5*time.Second), &objectstorev1.ExistsRequest{Key: "yes"}); err != nil {
		t.Fatalf("call after the hostile lines: %v", err)
	}
	out := logs.String()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "{") || !strings.Contains(line, `"plugin":"faulty-serve"`) {
			t.Errorf("a hostile line escaped into the host's log unframed: %.200q", line)
		}
	}
	if l := lacks(out, `"msg":"{\"an\":\"object\"}"`, `"truncated":true`, "hostile done on fd2", "hostile done on stdout", "hostile done on stderr"); len(l) > 0 {
		t.Errorf("logs lack %q", l)
	}
	closeQuickly(t, c, time.Second)
	nothingRunning(t)
	emptyDir(t, dir)
}

// TestSIGKILLedPlugin: a plugin killed with SIGKILL cannot remove its
// private socket directory, and plugkit's host does not remove it for it:
// the directory is the plugin's (for a go-plugin plugin the socket's
// parent is the temp dir itself). The host's own sockets (a brokered
// service here) are all gone after Close.
func TestSIGKILLedPlugin(t *testing.T) {
	testutil.NotOnWindows(t, "it checks the socket directories a killed plugin leaves; Windows plugins listen on TCP (the crash itself is TestCloseAfterCrash in host)")
	dir := socketDir(t)
	var logs syncBuffer
	c := start(t, config(t, "serve", dir, &logs))
	id := c.Broker().NextID()
	if err := c.Broker().Serve(ctxT(t, 5*time.Second), id, func(s *grpc.Server) {}); err != nil {
		t.Fatal(err)
	}
	if n := len(entries(dir)); n < 4 {
		t.Fatalf("want the plugin's and the host's broker socket dirs, have %v", entries(dir))
	}
	testutil.Kill(c.Pid())
	select {
	case <-c.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("the killed plugin was not reaped")
	}
	if _, err := store(c).Exists(ctxT(t, 5*time.Second), &objectstorev1.ExistsRequest{Key: "yes"}); status.Code(err) != codes.Unavailable {
		t.Errorf("call to a killed plugin: %v, want Unavailable", err)
	}
	closeCrashed(t, c, "signal: killed", time.Second)
	nothingRunning(t)
	nothingLeftIn(t, dir, c)
}

// TestSIGKILLedHost starts a host process (host.Start in a child), kills
// it with SIGKILL and checks its plugin is gone within 1 s: through the
// plugin's parent watch and the host's Pdeathsig together, and through
// Pdeathsig alone (a plugin that does not watch its parent). The plugin
// whose host died without warning leaves its socket directory behind.
func TestSIGKILLedHost(t *testing.T) {
	for _, mode := range []string{"host", "host-nowatch"} {
		t.Run(mode, func(t *testing.T) {
			dir := socketDir(t)
			exe, _ := os.Executable()
			cmd := exec.CommandContext(ctxT(t, 30*time.Second), exe)
			cmd.Env = append(os.Environ(), modeEnv+"="+mode, "GORACE=atexit_sleep_ms=0", tagEnv+"="+tag(t), "TMPDIR="+dir)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			var pid int
			var addr string
			if _, serr := fmt.Sscan(line, &pid, &addr); err != nil || serr != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the host printed %q (%v)", line, err)
			}
			if !testutil.Running(pid) {
				t.Fatal("plugin not running before its host was killed")
			}
			cmd.Process.Kill()
			cmd.Wait()
			killed := time.Now()
			if !waitFor(time.Second, func() bool { return !testutil.Running(pid) }) {
				testutil.Kill(pid)
				t.Fatalf("plugin %d still running 1 s after its host was killed", pid)
			}
			t.Logf("plugin gone %v after its host was SIGKILLed; left behind: %v", time.Since(killed).Round(time.Millisecond), entries(dir))
			nothingRunning(t)
		})
	}
}

// TestStrangerIsRefused connects to a plugin's socket as another local
// process would, without the host's certificate: in plain text, and with
// TLS and a self-signed certificate of its own. Both health calls fail;
// the host's connection keeps working.
func TestStrangerIsRefused(t *testing.T) {
	dir := socketDir(t)
	var logs syncBuffer
	c := start(t, config(t, "serve", dir, &logs))
	if !c.TLS() {
		t.Fatal("AutoMTLS is off")
	}
	stranger, err := automtls.New()
	if err != nil {
		t.Fatal(err)
	}
	strangerTLS := &tls.Config{Certificates: []tls.Certificate{stranger.Certificate}, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	for name, creds := range map[string]credentials.TransportCredentials{
		"plaintext":             insecure.NewCredentials(),
		"tls-with-its-own-cert": credentials.NewTLS(strangerTLS),
	} {
		addr := c.ReattachConfig().Addr.String
		conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", addr)
			}))
		if err != nil {
			t.Fatal(err)
		}
		_, err = healthpb.NewHealthClient(conn).Check(ctxT(t, 3*time.Second), &healthpb.HealthCheckRequest{Service: wire.HealthService})
		conn.Close()
		if err == nil {
			t.Errorf("%s: a stranger's health call succeeded", name)
		} else {
			t.Logf("%s: refused: %v", name, err)
		}
	}
	if _, err := store(c).Exists(ctxT(t, 5*time.Second), &objectstorev1.ExistsRequest{Key: "yes"}); err != nil {
		t.Errorf("the host's own call after the strangers: %v", err)
	}
	closeQuickly(t, c, time.Second)
	nothingRunning(t)
	emptyDir(t, dir)
}

// TestTamperedBinaryNeverRuns adds to manager's TestPinnedChecksum the
// proof that a tampered binary did not run at all: it would have left a
// marker file.
func TestTamperedBinaryNeverRuns(t *testing.T) {
	testutil.NotOnWindows(t, "its plugins are shell scripts")
	pluginDir, sockets := testutil.TempDir(t), socketDir(t)
	marker := filepath.Join(testutil.TempDir(t), "ran")
	exe, _ := os.Executable()
	bin := filepath.Join(pluginDir, "p")
	good := fmt.Sprintf("#!/bin/sh\n%s=catalog %s=%s GORACE=atexit_sleep_ms=0 PLUGIN_UNIX_SOCKET_DIR=%s exec '%s'\n", modeEnv, tagEnv, tag(t), sockets, exe)
	if err := os.WriteFile(bin, []byte(good), 0o755); err != nil {
		t.Fatal(err)
	}
	probe := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	sum := probe.Describe(ctxT(t, 20*time.Second), []string{bin})[0].SHA256
	pins := map[string]string{"p": sum}
	m := manager.New(manager.Config{Sources: []manager.Source{(&manager.Finder{Pins: pins, Launch: host.Command{Cookie: cookie}}).Dirs(pluginDir)}})
	t.Cleanup(func() { m.Close() })
	if err := m.Discover(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	conn, err := manager.Dispense(ctxT(t, 5*time.Second), m, "objectstore", "faults", manager.Majors[objectstorev1.ObjectStoreClient]{
		1: func(c *manager.Conn, _ manager.Info) (objectstorev1.ObjectStoreClient, error) {
			return objectstorev1.NewObjectStoreClient(c), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exists(ctxT(t, 10*time.Second), &objectstorev1.ExistsRequest{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	// Tamper with the binary (same size class, a marker instead of the
	// plugin), then make the manager start it again.
	evil := fmt.Sprintf("#!/bin/sh\ntouch '%s'\n", marker)
	if err := os.WriteFile(bin, []byte(evil), 0o755); err != nil {
		t.Fatal(err)
	}
	m.Close()
	m2 := manager.New(manager.Config{Sources: []manager.Source{(&manager.Finder{Pins: pins, Launch: host.Command{Cookie: cookie}}).Dirs(pluginDir)}})
	t.Cleanup(func() { m2.Close() })
	if err := m2.Discover(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	var pe *host.ChecksumError
	if bins := m2.Entries(); len(bins) != 1 || !errors.As(bins[0].Err, &pe) {
		t.Errorf("discovery of the tampered binary: %+v, want a *host.ChecksumError", bins)
	} else if !strings.Contains(pe.Error(), "refused to run it") {
		t.Errorf("pin error says %q", pe)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the tampered binary ran")
	}
	m2.Close()
	nothingRunning(t)
	emptyDir(t, sockets)
}

// manyCalls makes calls from goroutines on one plugin connection and
// checks that every call succeeded and that goroutines, open files and
// heap, in the host and in the plugin, return to their baseline.
func manyCalls(t *testing.T, calls, goroutines int) {
	dir := socketDir(t)
	var logs syncBuffer
	c := start(t, config(t, "serve", dir, &logs))
	cl := store(c)
	warm := func(n int) {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl.Exists(ctxT(t, 10*time.Second), &objectstorev1.ExistsRequest{Key: "yes"})
			}()
		}
		wg.Wait()
	}
	warm(goroutines)
	base := measure()
	pluginFDs := fdCount(c.Pid())
	var next, ok atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	begin := time.Now()
	ctx := ctxT(t, 25*time.Minute)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(calls) {
				resp, err := cl.Exists(ctx, &objectstorev1.ExistsRequest{Key: "yes"})
				if err != nil || !resp.GetExists() {
					firstErr.CompareAndSwap(nil, fmt.Errorf("call: %v %v", resp, err))
					continue
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	took := time.Since(begin)
	if err := firstErr.Load(); err != nil || ok.Load() != int64(calls) {
		t.Fatalf("%d of %d calls succeeded; first failure: %v", ok.Load(), calls, err)
	}
	var after baseline
	settled := waitFor(5*time.Second, func() bool {
		after = measure()
		return after.goroutines <= base.goroutines && after.fds <= base.fds && after.heap <= base.heap+4<<20
	})
	if !settled {
		t.Errorf("after %d calls: goroutines %d -> %d, open files %d -> %d, heap %d KiB -> %d KiB", calls,
			base.goroutines, after.goroutines, base.fds, after.fds, base.heap>>10, after.heap>>10)
	}
	if n := fdCount(c.Pid()); n > pluginFDs {
		t.Errorf("plugin open files %d -> %d", pluginFDs, n)
	}
	t.Logf("%d calls from %d goroutines in %v (%.0f calls/s); goroutines %d -> %d, fds %d -> %d, heap %d -> %d KiB",
		calls, goroutines, took.Round(time.Millisecond), float64(calls)/took.Seconds(),
		base.goroutines, after.goroutines, base.fds, after.fds, base.heap>>10, after.heap>>10)
	closeQuickly(t, c, time.Second)
	nothingRunning(t)
	emptyDir(t, dir)
}

func TestManyCalls(t *testing.T) { manyCalls(t, 20_000, 100) }

// TestSoakManyCalls is the full version, run by make soak
// (PLUGKIT_SOAK=1): a million calls from a thousand goroutines.
func TestSoakManyCalls(t *testing.T) {
	if os.Getenv("PLUGKIT_SOAK") == "" {
		t.Skip("set PLUGKIT_SOAK=1 (make soak) for a million calls from 1000 goroutines")
	}
	manyCalls(t, 1_000_000, 1000)
}
