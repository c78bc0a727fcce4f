package sandbox_test

// Issue 19, point 1: what a hostile plugin tried from inside the sandbox,
// each of which must fail, and what it must still be able to do.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/sandbox"
)

// mountsOf parses the probe's "mounts" answer: mount point -> the last
// mount's "type options".
func mountsOf(t *testing.T, c *host.Client) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(do(t, c, "mounts"), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("the probe's mounts line %q", l)
		}
		m[f[0]] = f[1] + " " + f[2]
	}
	return m
}

func readOnly(opts string) bool {
	_, o, _ := strings.Cut(opts, " ")
	return strings.HasPrefix(o, "ro,") || o == "ro"
}

// The kernel's knobs under /proc/sys cannot be written: core_pattern
// (a pipe there runs a program as root on the host when a process
// crashes), the host name, drop_caches. /proc/sys is a read-only mount of
// its own, whatever the plugin's user.
func TestSandboxProcSysReadOnly(t *testing.T) { bothModes(t, testSandboxProcSysReadOnly) }

func testSandboxProcSysReadOnly(t *testing.T) {
	c := startSandboxed(t, sandbox.Runner{})
	for _, path := range []string{"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches"} {
		got := do(t, c, "openw "+path)
		if !strings.Contains(got, "read-only file system") && !strings.Contains(got, "permission denied") {
			t.Errorf("opening %s for writing from the sandbox: %q; want it refused", path, got)
		}
	}
	mounts := mountsOf(t, c)
	for _, dir := range []string{"/proc/sys", "/proc/irq", "/proc/bus", "/proc/fs"} {
		if _, err := os.Stat(dir); err != nil {
			continue // not built into this kernel
		}
		if m, ok := mounts[dir]; !ok || !readOnly(m) {
			t.Errorf("%s in the sandbox is mounted %q; want a read-only mount of its own", dir, m)
		}
	}
	if m := mounts["/proc"]; readOnly(m) {
		t.Errorf("/proc itself is mounted %q; the plugin's own /proc/self must stay writable", m)
	}
}

// The files of /proc that leak the kernel's timers, keys and memory read
// nothing, and /sys/firmware is empty.
func TestSandboxMasksKernelFiles(t *testing.T) { bothModes(t, testSandboxMasksKernelFiles) }

func testSandboxMasksKernelFiles(t *testing.T) {
	c := startSandboxed(t, sandbox.Runner{})
	checked := 0
	for _, path := range []string{"/proc/kcore", "/proc/sysrq-trigger", "/proc/keys", "/proc/timer_list", "/proc/sched_debug"} {
		if _, err := os.Stat(path); err != nil {
			continue // not built into this kernel: nothing to mask
		}
		checked++
		if got := do(t, c, "read "+path); got != "" {
			if len(got) > 200 {
				got = got[:200] + "..."
			}
			t.Errorf("reading %s from the sandbox: %q; want nothing (masked)", path, got)
		}
	}
	if checked == 0 {
		t.Fatal("none of the files to mask exists on this kernel: the test proves nothing")
	}
	if entries, err := os.ReadDir("/sys/firmware"); err == nil && len(entries) > 0 {
		if got := do(t, c, "ls /sys/firmware"); got != "" {
			t.Errorf("/sys/firmware in the sandbox holds %q; want it empty (masked)", got)
		}
	}
	if m := mountsOf(t, c)["/sys/firmware"]; !strings.HasPrefix(m, "tmpfs ") || !readOnly(m) {
		t.Errorf("/sys/firmware in the sandbox is mounted %q; want an empty read-only tmpfs", m)
	}
}

// The plugin has UTS, IPC and cgroup namespaces of its own: it neither
// shares nor can set the host's name, and does not see the host's System V
// shared memory.
func TestSandboxOwnNamespaces(t *testing.T) { bothModes(t, testSandboxOwnNamespaces) }

func testSandboxOwnNamespaces(t *testing.T) {
	key := 0x706b0000 | os.Getpid()&0xffff
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o666)
	if err != nil {
		t.Fatalf("creating the host's shared memory segment: %v", err)
	}
	t.Cleanup(func() { unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
	if _, err := unix.SysvShmGet(key, 0, 0); err != nil {
		t.Fatalf("control: the host cannot find its own segment: %v", err)
	}
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}

	c := startSandboxed(t, sandbox.Runner{})
	if got := do(t, c, fmt.Sprint("shmget ", key)); got != "no such file or directory" {
		t.Errorf("the plugin looking up the host's shared memory (key %#x): %q; want no such file or directory", key, got)
	}
	for _, ns := range []string{"uts", "ipc", "cgroup", "mnt", "net", "pid"} {
		mine, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		if got := do(t, c, "ns "+ns); got == mine || !strings.HasPrefix(got, ns+":[") {
			t.Errorf("the plugin's %s namespace is %q, the host's %q; want one of its own", ns, got, mine)
		}
	}
	if got := do(t, c, "sethostname plugkit-escaped"); got != "operation not permitted" {
		t.Errorf("sethostname from the sandbox: %q; want operation not permitted", got)
	}
	if now, err := os.Hostname(); err != nil || now != hostname {
		t.Errorf("the host's name is %q (%v) after the plugin's attempts; want %q", now, err, hostname)
	}
}

// /dev is a tmpfs of its own with the usual devices and links, not the
// host's: no /dev/kmsg, no disks.
func TestSandboxMinimalDev(t *testing.T) { bothModes(t, testSandboxMinimalDev) }

func testSandboxMinimalDev(t *testing.T) {
	c := startSandboxed(t, sandbox.Runner{})
	got := strings.Split(do(t, c, "ls /dev"), "\n")
	sort.Strings(got)
	want := []string{"fd", "full", "null", "random", "stderr", "stdin", "stdout", "urandom", "zero"} // no tty: TestSandboxHostTerminal
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the sandbox's /dev holds %q; want %q", got, want)
	}
	if got := do(t, c, "openw /dev/kmsg"); !strings.Contains(got, "no such file or directory") {
		t.Errorf("opening /dev/kmsg for writing from the sandbox: %q; want no such file", got)
	}
	if got := do(t, c, "write /dev/null"); got != "ok" {
		t.Errorf("writing /dev/null: %q", got)
	}
	if got := do(t, c, "ls /dev/fd"); got == "" || strings.Contains(got, "no such") {
		t.Errorf("/dev/fd in the sandbox: %q; want the plugin's descriptors", got)
	}
	if got := do(t, c, "write /dev/plugkit-escaped"); !strings.Contains(got, "read-only file system") {
		t.Errorf("creating a file in /dev: %q; want read-only file system", got)
	}
	if m := mountsOf(t, c)["/dev"]; !strings.HasPrefix(m, "tmpfs ") || !readOnly(m) {
		t.Errorf("/dev in the sandbox is mounted %q; want a read-only tmpfs", m)
	}
}

// statusField returns the fields of one line of the probe's status.
func statusField(status, name string) string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "(missing)"
}

// The plugin runs as nobody (65534), with no supplementary group, and
// still serves, writes the granted directory, and dials the host's
// brokered services.
func TestSandboxedPluginRunsUnprivileged(t *testing.T) {
	bothModes(t, testSandboxedPluginRunsUnprivileged)
}

func testSandboxedPluginRunsUnprivileged(t *testing.T) {
	granted := t.TempDir()
	c := startSandboxed(t, sandbox.Runner{Writable: granted})
	status := do(t, c, "status")
	for field, want := range map[string]string{"Uid": "65534 65534 65534 65534", "Gid": "65534 65534 65534 65534", "Groups": ""} {
		if got := statusField(status, field); got != want {
			t.Errorf("the plugin's %s: %q; want %q", field, got, want)
		}
	}
	in := filepath.Join(granted, "nobody.txt")
	if got := do(t, c, "write "+in); got != "ok" {
		t.Fatalf("writing the granted directory as nobody: %s", got)
	}
	if fi, err := os.Stat(in); err != nil {
		t.Error(err)
	} else if st := fi.Sys().(*syscall.Stat_t); st.Uid != sandbox.Nobody || st.Gid != sandbox.Nobody {
		t.Errorf("the plugin's file is owned by %d:%d on the host; want %d:%d", st.Uid, st.Gid, sandbox.Nobody, sandbox.Nobody)
	}
	callback(t, c, healthpb.HealthCheckResponse_SERVING)
}

// A Runner may name another user and group.
func TestSandboxedPluginRunsAsConfiguredUser(t *testing.T) {
	bothModes(t, testSandboxedPluginRunsAsConfiguredUser)
}

func testSandboxedPluginRunsAsConfiguredUser(t *testing.T) {
	granted := t.TempDir()
	if rootless() {
		// Only root may become another user: said, never ignored.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := config(t, sandbox.Runner{Writable: granted, UID: 4321, GID: 4322}).start(ctx)
		if err == nil {
			c.Close()
			t.Fatal("a rootless host started a plugin as user 4321")
		}
		if !strings.Contains(err.Error(), "need a host running as root") || !strings.Contains(err.Error(), "leave them 0") {
			t.Errorf("Start: %v; want an error saying UID and GID need root", err)
		}
		return
	}
	c := startSandboxed(t, sandbox.Runner{Writable: granted, UID: 4321, GID: 4322})
	status := do(t, c, "status")
	for field, want := range map[string]string{"Uid": "4321 4321 4321 4321", "Gid": "4322 4322 4322 4322", "Groups": ""} {
		if got := statusField(status, field); got != want {
			t.Errorf("the plugin's %s: %q; want %q", field, got, want)
		}
	}
	if got := do(t, c, "write "+filepath.Join(granted, "x")); got != "ok" {
		t.Errorf("writing the granted directory as 4321: %s", got)
	}
	callback(t, c, healthpb.HealthCheckResponse_SERVING)
}

// callback has the host serve a brokered health service reporting status
// and the plugin, inside the sandbox, dial it and read the status back.
func callback(t *testing.T, c *host.Client, status healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := c.Broker().NextID()
	err := c.Broker().Serve(ctx, id, func(s *grpc.Server) {
		h := health.NewServer()
		h.SetServingStatus("host", status)
		healthpb.RegisterHealthServer(s, h)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := do(t, c, fmt.Sprint("callback ", id)), "host says "+status.String(); got != want {
		t.Errorf("callback from the sandbox: %s, want %s", got, want)
	}
}

func TestRunnerRejectsBadIDs(t *testing.T) { bothModes(t, testRunnerRejectsBadIDs) }

func testRunnerRejectsBadIDs(t *testing.T) {
	requireSandbox(t)
	for _, r := range []sandbox.Runner{{UID: -1}, {GID: -5}, {UID: 1 << 32}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := config(t, r).start(ctx)
		cancel()
		if err == nil {
			c.Close()
			t.Errorf("UID %d GID %d: started", r.UID, r.GID)
			continue
		}
		if !strings.Contains(err.Error(), "out of range") {
			t.Errorf("UID %d GID %d: %v; want out of range", r.UID, r.GID, err)
		}
	}
}

// The seccomp filter refuses, with EPERM, the calls a container runtime
// refuses, including those a process without capabilities could make:
// ptrace of its own child, unshare, add_key.
func TestSandboxSeccompFilter(t *testing.T) { bothModes(t, testSandboxSeccompFilter) }

func testSandboxSeccompFilter(t *testing.T) {
	c := startSandboxed(t, sandbox.Runner{})
	if got := statusField(do(t, c, "status"), "Seccomp"); got != "2" {
		t.Errorf("the plugin's seccomp mode: %q; want 2 (filter)", got)
	}
	for _, cmd := range []string{"mount", "unshare", "ptrace", "addkey"} {
		if got := do(t, c, cmd); got != "operation not permitted" {
			t.Errorf("%s from the sandbox: %q; want operation not permitted", cmd, got)
		}
	}
	// Control: what the filter allows still works; the plugin serves and
	// starts a child (the ptrace probe above needed one).
	if got := do(t, c, "loopback"); got != "ok" {
		t.Errorf("the plugin's own loopback under the filter: %s", got)
	}
}

// A plugin its user may not execute fails to start, saying what to do.
func TestSandboxPluginNotExecutableByItsUser(t *testing.T) {
	bothModes(t, testSandboxPluginNotExecutableByItsUser)
}

func testSandboxPluginNotExecutableByItsUser(t *testing.T) {
	requireSandbox(t)
	cfg := config(t, sandbox.Runner{})
	src, err := os.ReadFile(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Path = filepath.Join(t.TempDir(), "root-only-plugin")
	mode := os.FileMode(0o700) // executable by root alone
	if rootless() {
		mode = 0o600 // the plugin runs as the host's user: executable by none
	}
	if err := os.WriteFile(cfg.Path, src, mode); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := cfg.start(ctx)
	if err == nil {
		c.Close()
		t.Fatal("a plugin its user may not execute started as nobody")
	}
	if rootless() {
		// The host's own check says it first: its user is the plugin's.
		if !strings.Contains(err.Error(), "is not executable") || !strings.Contains(err.Error(), "chmod +x") {
			t.Errorf("Start: %v; want an error saying it is not executable and what to do", err)
		}
		return
	}
	if !strings.Contains(err.Error(), "as user 65534") || !strings.Contains(err.Error(), "let that user execute it") {
		t.Errorf("Start: %v; want an error naming the user and saying what to do", err)
	}
}
