package sandbox_test

// The attacks of issue 36's points 2 (memory the rootless limit does not
// count), 5 (the socket directory) and 7 (the cause of death at Close).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/sandbox"
)

func init() {
	probeCommands["shmem"] = func(_ *probe, _ context.Context, arg string) (string, error) {
		kind, mib, _ := strings.Cut(arg, " ")
		n, _ := strconv.Atoi(mib)
		return holdShared(kind, n)
	}
	probeCommands["fill"] = func(_ *probe, _ context.Context, arg string) (string, error) {
		n, _ := strconv.Atoi(arg)
		return fillSocketDir(n)
	}
	probeCommands["peak"] = func(*probe, context.Context, string) (string, error) { return peakMemory(), nil }
	probeCommands["listeners"] = func(p *probe, ctx context.Context, arg string) (string, error) {
		n, _ := strconv.Atoi(arg)
		return p.listen(ctx, n), nil
	}
}

// listen opens up to n brokered listeners, kept open, until one fails; it
// answers how many it opened and why it stopped.
func (p *probe) listen(ctx context.Context, n int) string {
	for i := range n {
		ln, err := p.broker.Accept(ctx, p.broker.NextID())
		if err != nil {
			return fmt.Sprintf("opened %d, then: %v", i, err)
		}
		brokerListeners = append(brokerListeners, ln)
	}
	return fmt.Sprintf("opened %d", n)
}

// brokerListeners keeps what the listeners probe opened.
var brokerListeners []net.Listener

// sharedHoard keeps what the shmem probe mapped.
var sharedHoard [][]byte

// holdShared maps mib MiB of memory that RLIMIT_DATA does not count, of
// the kind given, touches every page and keeps it: "anon"
// (MAP_SHARED|MAP_ANONYMOUS), "memfd" (memfd_create, written), "zero"
// (MAP_SHARED of /dev/zero) or "sysv" (System V shared memory). It answers
// "held N MiB" with the process's peak resident memory, or the error.
func holdShared(kind string, mib int) (string, error) {
	size := mib << 20
	var mem []byte
	var err error
	switch kind {
	case "anon":
		mem, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	case "memfd":
		// Written, not mapped: the pages are the file's.
		var fd int
		if fd, err = unix.MemfdCreate("hoard", 0); err != nil {
			return "", fmt.Errorf("memfd_create: %w", err)
		}
		buf := make([]byte, 1<<20)
		for i := range buf {
			buf[i] = 1
		}
		for range mib {
			if _, err := unix.Write(fd, buf); err != nil {
				return "", fmt.Errorf("writing the memfd: %w", err)
			}
		}
		return "held " + mib2str(mib) + " " + peakMemory(), nil
	case "zero":
		var f *os.File
		if f, err = os.OpenFile("/dev/zero", os.O_RDWR, 0); err != nil {
			return "", err
		}
		defer f.Close()
		mem, err = unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	case "sysv":
		var id int
		if id, err = unix.SysvShmGet(unix.IPC_PRIVATE, size, unix.IPC_CREAT|0o600); err != nil {
			return "", fmt.Errorf("shmget: %w", err)
		}
		mem, err = unix.SysvShmAttach(id, 0, 0)
		unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	default:
		return "", fmt.Errorf("no shared memory kind %q", kind)
	}
	if err != nil {
		return "", fmt.Errorf("mapping %s: %w", kind, err)
	}
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	sharedHoard = append(sharedHoard, mem)
	return "held " + mib2str(mib) + " " + peakMemory(), nil
}

func mib2str(mib int) string { return strconv.Itoa(mib) + " MiB" }

// peakMemory is the VmHWM and RssShmem lines of /proc/self/status.
func peakMemory() string {
	b, _ := os.ReadFile("/proc/self/status")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") || strings.HasPrefix(l, "RssShmem:") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(out, ", ")
}

// fillSocketDir writes files of 1 MiB into the plugin's socket directory
// until mib MiB are written or a write fails; it answers how much it
// wrote, and why it stopped.
func fillSocketDir(mib int) (string, error) {
	dir := os.Getenv(handshake.EnvUnixSocketDir)
	if dir == "" {
		return "", errors.New("no socket directory")
	}
	buf := make([]byte, 1<<20)
	for i := range mib {
		if err := os.WriteFile(filepath.Join(dir, "fill-"+strconv.Itoa(i)), buf, 0o600); err != nil {
			return fmt.Sprintf("wrote %d MiB, then: %v", i, err), nil
		}
	}
	return fmt.Sprintf("wrote %d MiB", mib), nil
}

// Memory that RLIMIT_DATA does not count (shared anonymous mappings,
// memfd, shared mappings of /dev/zero, System V shared memory) is bounded
// by the memory limit too: refused where an rlimit enforces it, counted
// in the cgroup, whose limit kills the plugin, where one does. 1 GiB of
// any under a limit of at most 768 MiB is never held.
func TestSandboxMemoryLimitSharedMemory(t *testing.T) {
	bothModes(t, testSandboxMemoryLimitSharedMemory)
}

func testSandboxMemoryLimitSharedMemory(t *testing.T) {
	limit := memoryLimit(256 << 20)
	r := sandbox.Runner{Limits: sandbox.Limits{Memory: limit}}
	for _, kind := range []string{"anon", "memfd", "zero", "sysv"} {
		c := startSandboxed(t, r)
		got, err := try(c, "shmem "+kind+" 1024")
		t.Logf("%s: 1 GiB under a limit of %d MiB: %q, %v", kind, limit>>20, got, err)
		if strings.HasPrefix(got, "held") {
			t.Errorf("%s: the plugin held 1 GiB of shared memory under a memory limit of %d bytes: %s", kind, limit, got)
		}
		if err != nil {
			// Killed: by its cgroup's limit, which says so.
			select {
			case <-c.Exited():
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: the plugin still runs after its call failed", kind)
			}
			var mem *sandbox.MemoryLimitError
			if cerr := c.Close(); !errors.As(cerr, &mem) {
				t.Errorf("%s: the plugin died: %v; want it killed by its memory limit", kind, cerr)
			}
			continue
		}
		if !strings.Contains(got, "operation not permitted") {
			t.Errorf("%s: %q; want it refused (EPERM)", kind, got)
		}
		// Refused, the plugin serves on.
		if got := do(t, c, "alloc 16"); got != "ok" {
			t.Errorf("%s: the plugin after the refusal: %s", kind, got)
		}
		t.Logf("%s: the plugin's peak after the refusal: %s", kind, do(t, c, "peak"))
	}
}

// memoryLimit is the memory limit a test gives a plugin: cgroup, the
// limit given; rootless, rlimitMemory.
func memoryLimit(cgroup int64) int64 {
	if rootless() {
		return rlimitMemory()
	}
	return cgroup
}

// A plugin killed by its memory limit is reported so by the Close that
// follows at once, without waiting for Exited: the host's Close must not
// race the detection of the cause. Several times, as the race was lost
// most of them.
func TestSandboxCloseReportsMemoryLimit(t *testing.T) {
	bothModes(t, testSandboxCloseReportsMemoryLimit)
}

func testSandboxCloseReportsMemoryLimit(t *testing.T) {
	limit := memoryLimit(128 << 20)
	r := sandbox.Runner{Limits: sandbox.Limits{Memory: limit}}
	for i := range 4 {
		c := startSandboxed(t, r)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := c.Conn().Invoke(ctx, probeMethod, wrapperspb.String("alloc 2048"), new(wrapperspb.StringValue))
		cancel()
		if err == nil {
			t.Fatalf("the plugin allocated 2 GiB past its limit of %d bytes", limit)
		}
		var mem *sandbox.MemoryLimitError
		if cerr := c.Close(); !errors.As(cerr, &mem) || mem.Limit != limit {
			t.Errorf("run %d: Close at once after the memory limit killed the plugin: %v; want an error wrapping *sandbox.MemoryLimitError", i, cerr)
		}
	}
}

// The plugin's socket directory is bounded like its /tmp: a plugin with
// TmpSize 16 MiB cannot write 300 MiB there (it could, on the host's
// /tmp).
func TestSandboxSocketDirBounded(t *testing.T) { bothModes(t, testSandboxSocketDirBounded) }

func testSandboxSocketDirBounded(t *testing.T) {
	c := startSandboxed(t, sandbox.Runner{TmpSize: 16 << 20})
	got := do(t, c, "fill 300")
	t.Logf("writing 300 MiB into the socket directory: %s", got)
	var n int
	if _, err := fmt.Sscanf(got, "wrote %d MiB", &n); err != nil || n > 16 || !strings.Contains(got, "then:") {
		t.Errorf("writing 300 MiB into the socket directory with TmpSize 16 MiB: %q; want it stopped by 16 MiB", got)
	}
	// The plugin serves on.
	if got := do(t, c, "loopback"); got != "ok" {
		t.Errorf("the plugin after filling its socket directory: %s", got)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// A plugin that opens brokered listeners without end is stopped by its
// socket directory's bound (trampoline.SocketDirInodes: each listener
// takes a directory and a socket), well before 10,000, and Close ends
// it within its stop timeout. BenchmarkCloseManyListeners measures it.
func TestSandboxBrokerListenersBounded(t *testing.T) { bothModes(t, testSandboxBrokerListenersBounded) }

func testSandboxBrokerListenersBounded(t *testing.T) {
	c := startSandboxed(t, sandbox.Runner{})
	got := do(t, c, "listeners 10000")
	t.Logf("10,000 brokered listeners: %s", got)
	var n int
	if _, err := fmt.Sscanf(got, "opened %d, then:", &n); err != nil || n >= 10000 || !strings.Contains(got, "no space left on device") {
		t.Errorf("opening 10,000 brokered listeners: %q; want it stopped by the socket directory's bound (ENOSPC)", got)
	}
	if got := do(t, c, "loopback"); got != "ok" {
		t.Errorf("the plugin after its listeners: %s", got)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// BenchmarkCloseManyListeners measures Close of a sandboxed plugin that
// tried to open 10,000 brokered listeners (as many as its socket
// directory holds).
func BenchmarkCloseManyListeners(b *testing.B) {
	if err := sandbox.Available(); err != nil {
		b.Fatal(err)
	}
	cfg := config(b, sandbox.Runner{})
	for b.Loop() {
		b.StopTimer()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := cfg.start(ctx)
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		out := new(wrapperspb.StringValue)
		err = c.Conn().Invoke(ctx, probeMethod, wrapperspb.String("listeners 10000"), out)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c.Close()
	}
}
