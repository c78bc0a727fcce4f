package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/sandbox"
)

func TestMain(m *testing.M) {
	if os.Getenv(noInitEnv) == "" {
		sandbox.Init()
	}
	if os.Getenv(sleepEnv) != "" {
		time.Sleep(20 * time.Second)
		return
	}
	if os.Getenv(probeEnv) != "" {
		runProbePlugin()
		return
	}
	if os.Getenv(catalogEnv) != "" {
		runCatalogPlugin()
		return
	}
	if os.Getenv(hostEnv) != "" {
		runHost()
		return
	}
	if os.Getenv(ttyHostEnv) != "" {
		runTTYHost()
		return
	}
	os.Exit(testutil.Main(testutil.Then(m, func() {
		for _, f := range cleanups {
			f()
		}
	})))
}

// requireSandbox fails the test, in one line, where this process cannot
// make namespaces: CI runs as root, so a missing privilege is a failure.
func requireSandbox(t *testing.T) {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		t.Fatal(err)
	}
}

// launchConfig is what a test gives host.Start, each field reachable as
// cfg.Field.
type launchConfig struct {
	host.Command
	host.Options
}

// start calls host.Start with cfg.
func (cfg launchConfig) start(ctx context.Context) (*host.Client, error) {
	return host.Start(ctx, cfg.Command, cfg.Options)
}

// startClose starts the plugin cfg describes, within 20 s, and closes
// it (the benchmarks' iteration).
func (cfg launchConfig) startClose(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := cfg.start(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	c.Close()
}

// config starts this test binary as the probe plugin.
func config(tb testing.TB, r sandbox.Runner) launchConfig {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return launchConfig{
		Command: host.Command{
			Path:     exe,
			Env:      []string{probeEnv + "=1", "GORACE=atexit_sleep_ms=0"},
			Cookie:   testCookie,
			Runner:   r,
			Timeouts: host.Timeouts{Start: 10 * time.Second},
		},
		Options: host.Options{
			Versions: []int{1},
			Logger:   slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)),
		},
	}
}

func startSandboxed(t *testing.T, r sandbox.Runner) *host.Client {
	t.Helper()
	return startCfg(t, config(t, r))
}

// startCfg starts the plugin cfg describes in its sandbox.Runner, within
// 20 s, and closes it when the test ends.
func startCfg(t *testing.T, cfg launchConfig) *host.Client {
	t.Helper()
	if _, err := cfg.Runner.(sandbox.Runner).Check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := cfg.start(ctx)
	if err != nil {
		t.Fatalf("Start in the sandbox: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// do asks the plugin to run one probe command inside the sandbox.
func do(t *testing.T, c *host.Client, cmd string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := new(wrapperspb.StringValue)
	if err := c.Conn().Invoke(ctx, probeMethod, wrapperspb.String(cmd), out); err != nil {
		t.Fatalf("probe %q: %v", cmd, err)
	}
	return out.GetValue()
}

func TestSandboxedPluginServesHost(t *testing.T) { bothModes(t, testSandboxedPluginServesHost) }

func testSandboxedPluginServesHost(t *testing.T) {
	c := startSandboxed(t, sandbox.Runner{})
	if c.ReattachConfig().Addr.Network != "unix" || !c.TLS() {
		t.Errorf("connection %s TLS %v; want unix with AutoMTLS", c.ReattachConfig().Addr.Network, c.TLS())
	}
	if got := do(t, c, "loopback"); got != "ok" {
		t.Errorf("the plugin's own loopback: %s; want ok (lo must be up)", got)
	}

	// The host gives a sandboxed plugin a process group of its own, as
	// any plugin (TestSandboxedPluginDiesWithItsHost: Pdeathsig).
	if pgid, err := syscall.Getpgid(c.Pid()); err != nil || pgid != c.Pid() {
		t.Errorf("the plugin's process group is %d (%v); want its own, %d", pgid, err, c.Pid())
	}

	// A callback: the host serves on a brokered socket in the shared
	// socket directory, the plugin dials it from inside the sandbox.
	callback(t, c, healthpb.HealthCheckResponse_NOT_SERVING)

	// Close stops it as it stops any plugin: politely, and reaped.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Exited():
	default:
		t.Error("the sandboxed plugin still runs after Close")
	}
}

func TestSandboxedPluginHasNoNetwork(t *testing.T) { bothModes(t, testSandboxedPluginHasNoNetwork) }

func testSandboxedPluginHasNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	}()
	// Control: the listener is reachable from the host's namespace.
	conn, err := net.DialTimeout("tcp", ln.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatalf("the host cannot reach its own listener: %v", err)
	}
	conn.Close()
	for accepted.Load() != 1 {
		time.Sleep(time.Millisecond)
	}

	c := startSandboxed(t, sandbox.Runner{})
	got := do(t, c, "dial "+ln.Addr().String())
	if !strings.Contains(got, "connection refused") {
		t.Errorf("the plugin dialing the host's %s: %q; want connection refused (its loopback is its own)", ln.Addr(), got)
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("the host's listener accepted %d connections; want only the host's own", n)
	}
	if got := do(t, c, "ls /sys/class/net"); got != "lo" {
		t.Errorf("the plugin's network interfaces: %q; want lo alone", got)
	}
}

func TestSandboxedPluginWritesOnlyGrantedDir(t *testing.T) {
	bothModes(t, testSandboxedPluginWritesOnlyGrantedDir)
}

func testSandboxedPluginWritesOnlyGrantedDir(t *testing.T) {
	granted := t.TempDir()
	// A host directory the sandbox shows read-only: the package's own,
	// unless the checkout lies under /tmp, which the sandbox replaces.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if wd == "/tmp" || strings.HasPrefix(wd, "/tmp/") {
		wd = "/var/tmp"
	}
	outside, err := os.MkdirTemp(wd, ".sandbox-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	// Readable and searchable by the plugin's user, as most of the
	// host's directories are: only the read-only mount stops its writes.
	if err := os.Chmod(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	hostFile := filepath.Join(outside, "host.txt")
	if err := os.WriteFile(hostFile, []byte("a file of the host's"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startSandboxed(t, sandbox.Runner{Writable: granted})

	in := filepath.Join(granted, "inside.txt")
	if got := do(t, c, "write "+in); got != "ok" {
		t.Fatalf("writing in the granted directory: %s", got)
	}
	if b, err := os.ReadFile(in); err != nil || string(b) != "written in the sandbox" {
		t.Errorf("the host reads %q, %v from what the plugin wrote", b, err)
	}
	for _, path := range []string{filepath.Join(outside, "escaped.txt"), filepath.Join(wd, ".sandbox-escaped"), "/etc/plugkit-sandbox-escaped"} {
		if got := do(t, c, "write "+path); !strings.Contains(got, "read-only file system") {
			t.Errorf("writing %s outside the granted directory: %q; want read-only file system", path, got)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			os.Remove(path)
			t.Errorf("%s exists on the host after the plugin's write: %v", path, err)
		}
	}
	// It reads the host's files, and cannot undo the sandbox.
	if got := do(t, c, "read "+hostFile); got != "a file of the host's" {
		t.Errorf("reading a host file: %q", got)
	}
	if got := do(t, c, "remount"); !strings.Contains(got, "operation not permitted") {
		t.Errorf("remounting / writable from inside: %q; want operation not permitted", got)
	}
	status := do(t, c, "status")
	for _, want := range []string{"CapEff: 0000000000000000", "CapPrm: 0000000000000000", "CapBnd: 0000000000000000", "CapAmb: 0000000000000000", "NoNewPrivs: 1"} {
		if !strings.Contains(status, want) {
			t.Errorf("the plugin's status lacks %q:\n%s", want, status)
		}
	}
}

func TestSandboxedPluginHasPrivateTmp(t *testing.T) { bothModes(t, testSandboxedPluginHasPrivateTmp) }

func testSandboxedPluginHasPrivateTmp(t *testing.T) {
	hostFile, err := os.CreateTemp("/tmp", "plugkit-sandbox-host-")
	if err != nil {
		t.Fatal(err)
	}
	hostFile.Close()
	t.Cleanup(func() { os.Remove(hostFile.Name()) })
	c := startSandboxed(t, sandbox.Runner{})

	listing := do(t, c, "ls /tmp")
	if strings.Contains(listing, filepath.Base(hostFile.Name())) {
		t.Errorf("the plugin sees the host's %s in its /tmp:\n%s", hostFile.Name(), listing)
	}
	// Only its socket directory's path shows through: plugkit-host-*, or
	// the first directory of the host's TMPDIR when that is below /tmp
	// (testutil.Main's, say).
	want := "plugkit-host-"
	if rel, err := filepath.Rel("/tmp", os.TempDir()); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		want = strings.Split(rel, string(filepath.Separator))[0]
	}
	if !strings.HasPrefix(listing, want) || strings.Contains(listing, "\n") {
		t.Errorf("the plugin's /tmp holds %q; want its socket directory's path (%s*) alone", listing, want)
	}
	mine := fmt.Sprintf("/tmp/plugkit-sandbox-plugin-%d", os.Getpid())
	if got := do(t, c, "write "+mine); got != "ok" {
		t.Fatalf("writing its own /tmp: %s", got)
	}
	if got := do(t, c, "read "+mine); got != "written in the sandbox" {
		t.Errorf("reading back its own /tmp file: %q", got)
	}
	if _, err := os.Stat(mine); !errors.Is(err, os.ErrNotExist) {
		os.Remove(mine)
		t.Errorf("the plugin's /tmp file %s shows in the host's /tmp: %v", mine, err)
	}
	if got := do(t, c, "read /proc/self/environ"); !strings.Contains(got, "TMPDIR=/tmp\x00") || strings.Contains(got, "PLUGKIT_SANDBOX_INIT") {
		t.Errorf("the plugin's environment should have TMPDIR=/tmp and not the trampoline's variable:\n%q", got)
	}
}

func TestSandboxPinnedBinary(t *testing.T) { bothModes(t, testSandboxPinnedBinary) }

func testSandboxPinnedBinary(t *testing.T) {
	requireSandbox(t)
	cfg := config(t, sandbox.Runner{})
	sum, err := fileSHA256(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.SHA256 = sum
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := cfg.start(ctx)
	if err != nil {
		t.Fatalf("a pinned binary in the sandbox: %v", err)
	}
	defer c.Close()
	if got := do(t, c, "write /tmp/x"); got != "ok" {
		t.Errorf("probe in a pinned sandboxed plugin: %s", got)
	}
}

func TestSandboxRefusesTCPPlugin(t *testing.T) { bothModes(t, testSandboxRefusesTCPPlugin) }

func testSandboxRefusesTCPPlugin(t *testing.T) {
	requireSandbox(t)
	cfg := config(t, sandbox.Runner{})
	cfg.Listen.Network = "tcp"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := cfg.start(ctx)
	if err == nil {
		c.Close()
		t.Fatal("a sandboxed plugin on TCP started; the host cannot reach its loopback")
	}
	if !strings.Contains(err.Error(), "leave host.Command.Listen.Network empty") {
		t.Errorf("error %q does not say to use a unix socket", err)
	}
}

func TestRunnerRejectsBadWritable(t *testing.T) { bothModes(t, testRunnerRejectsBadWritable) }

func testRunnerRejectsBadWritable(t *testing.T) {
	requireSandbox(t)
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for dir, want := range map[string]string{
		"relative/dir":  "not an absolute path",
		"/no/such/dir":  "create the directory first",
		file:            "not a directory",
		"/":             "would expose the host's / or /tmp",
		"/tmp":          "would expose the host's / or /tmp",
		"/tmp/../tmp/.": "would expose the host's / or /tmp",
	} {
		cfg := config(t, sandbox.Runner{Writable: dir})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := cfg.start(ctx)
		cancel()
		if err == nil {
			c.Close()
			t.Errorf("Writable %q: started", dir)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Writable %q: %v; want %q", dir, err, want)
		}
	}
}

// noInitEnv makes the test binary a host that did not call sandbox.Init.
const noInitEnv = "PLUGKIT_SANDBOX_TEST_NO_INIT"

// A host that forgot sandbox.Init would have its own binary, re-executed
// to become the sandbox, run its main instead: the plugin unsandboxed,
// or the host twice. Prepare refuses, and says what to call.
func TestPrepareRefusesWithoutInit(t *testing.T) {
	if os.Getenv(noInitEnv) != "" {
		startWithoutInit(t)
		return
	}
	requireSandbox(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestPrepareRefusesWithoutInit$")
	cmd.Env = append(os.Environ(), noInitEnv+"=1", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the host without sandbox.Init: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "refused: ") || !strings.Contains(string(out), "call it first thing in main") {
		t.Errorf("a host that did not call sandbox.Init started a sandboxed plugin, or was not told to call it:\n%s", out)
	}
}

// startWithoutInit starts a sandboxed probe in this process, which did
// not call sandbox.Init, and prints what happened.
func startWithoutInit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := config(t, sandbox.Runner{}).start(ctx)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	client.Close()
	fmt.Println("started")
}

// The trampoline's variable, set by mistake on a process that is not in
// namespaces of its own, must not remount anything.
func TestTrampolineRefusesHostNamespaces(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), `PLUGKIT_SANDBOX_INIT={"Exe":"/bin/true","Dir":"/","TmpSize":1}`)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 126 {
		t.Fatalf("the trampoline in the host's namespaces: %v, output %q; want exit 126", err, out)
	}
	if !strings.Contains(string(out), "PID namespace of its own") || !strings.Contains(string(out), "unset it") {
		t.Errorf("output %q does not say why it refused", out)
	}
	// The host's /tmp is still the host's.
	probe, err := os.CreateTemp("", "plugkit-sandbox-still-writable-")
	if err != nil {
		t.Fatalf("the host's temporary directory after the refused trampoline: %v", err)
	}
	probe.Close()
	os.Remove(probe.Name())
}

// TestSandboxedPluginDiesWithItsHost SIGKILLs a host process whose
// sandboxed plugin does not watch its parent: the host's Pdeathsig, kept
// through the trampoline's exec and the dropped capabilities, ends it.
func TestSandboxedPluginDiesWithItsHost(t *testing.T) {
	bothModes(t, testSandboxedPluginDiesWithItsHost)
}

func testSandboxedPluginDiesWithItsHost(t *testing.T) {
	requireSandbox(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), hostEnv+"=1", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil || !testutil.Running(pid) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the host printed %q (%v); want the running plugin's pid", line, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(time.Second)
	for testutil.Running(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("sandboxed plugin %d still runs 1 s after its host was SIGKILLed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The plugin is process 1 of a PID namespace of its own: it sees no
// process of the host's and cannot signal the host, although it runs as
// the same user.
func TestSandboxedPluginSeesNoHostProcess(t *testing.T) {
	bothModes(t, testSandboxedPluginSeesNoHostProcess)
}

func testSandboxedPluginSeesNoHostProcess(t *testing.T) {
	c := startSandboxed(t, sandbox.Runner{})
	if got := do(t, c, "pids"); got != "1" {
		t.Errorf("the plugin sees processes %q; want itself alone, as 1", got)
	}
	for _, pid := range []int{os.Getpid(), os.Getppid()} {
		if got := do(t, c, fmt.Sprint("signal ", pid)); got != "no such process" {
			t.Errorf("the plugin signalling host process %d: %q; want no such process", pid, got)
		}
	}
	if err := syscall.Kill(c.Pid(), 0); err != nil {
		t.Errorf("the host cannot signal its plugin %d: %v", c.Pid(), err)
	}
}

// With a multiplexed broker the callback runs over the plugin's one
// connection, through the sandbox as well.
func TestSandboxedPluginMultiplexedCallback(t *testing.T) {
	bothModes(t, testSandboxedPluginMultiplexedCallback)
}

func testSandboxedPluginMultiplexedCallback(t *testing.T) {
	requireSandbox(t)
	cfg := config(t, sandbox.Runner{})
	cfg.MultiplexBroker = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := cfg.start(ctx)
	if err != nil {
		t.Fatalf("Start in the sandbox with a multiplexed broker: %v", err)
	}
	defer c.Close()
	id := c.Broker().NextID()
	err = c.Broker().Serve(ctx, id, func(s *grpc.Server) {
		h := health.NewServer()
		h.SetServingStatus("host", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(s, h)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := do(t, c, fmt.Sprint("callback ", id)); got != "host says SERVING" {
		t.Errorf("multiplexed callback from the sandbox: %s", got)
	}
}

func TestInheritedDir(t *testing.T) {
	for _, tc := range []struct {
		wd, writable, want string
		keep               []string
	}{
		{wd: "/work/repo", want: "/work/repo"},
		{wd: "/tmp/ci/repo", want: "/"},
		{wd: "/tmp/ci/repo", writable: "/srv/data", keep: []string{"/srv/data"}, want: "/srv/data"},
		{wd: "/tmp/ci/repo", writable: "/tmp/ci", keep: []string{"/tmp/ci"}, want: "/tmp/ci/repo"},
		{wd: "/tmpfoo/x", want: "/tmpfoo/x"},
	} {
		if got := sandbox.InheritedDir(tc.wd, tc.keep, tc.writable); got != tc.want {
			t.Errorf("InheritedDir(%q, %q, %q) = %q, want %q", tc.wd, tc.keep, tc.writable, got, tc.want)
		}
	}
}
