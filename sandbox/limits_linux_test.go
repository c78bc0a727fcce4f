package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/sandbox"
)

// startErr starts the probe with r and returns Start's error (nil means
// it started, and it is closed).
func startErr(t *testing.T, r sandbox.Runner) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := config(t, r).start(ctx)
	if err == nil {
		c.Close()
	}
	return err
}

// What enforces each limit: cgroups for a root host (v1 on this
// project's hybrid machines, v2 where it is alone), rlimits for open
// files and, in the plugin's own user namespace, processes, and for memory
// where there is no cgroup (RLIMIT_DATA); a rootless host refuses a CPU
// limit, saying why.
func TestSandboxLimitEnforcement(t *testing.T) { bothModes(t, testSandboxLimitEnforcement) }

func testSandboxLimitEnforcement(t *testing.T) {
	all := sandbox.Runner{Limits: sandbox.Limits{Memory: 64 << 20, CPU: 0.5, Processes: 50, OpenFiles: 100}}
	e, err := all.Enforcement()
	if rootless() {
		for _, want := range []string{"Runner.Limits.CPU needs a cgroup with the cpu controller", "not root", "delegated cgroup v2", "RLIMIT_CPU bounds total seconds"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Enforcement of a CPU limit, rootless: %+v, %v; want an error saying %q", e, err, want)
			}
		}
		if err := startErr(t, all); err == nil || !strings.Contains(err.Error(), "needs a cgroup") {
			t.Errorf("Start with a CPU limit, rootless: %v; want refused", err)
		}
		e, err := sandbox.Runner{Limits: sandbox.Limits{Memory: 64 << 20, Processes: 50, OpenFiles: 100}}.Enforcement()
		if want := (sandbox.Enforcement{Memory: sandbox.ByRlimit, Processes: sandbox.ByRlimit, OpenFiles: sandbox.ByRlimit}); err != nil || e != want {
			t.Errorf("Enforcement of memory, processes and open files, rootless: %+v, %v; want %+v", e, err, want)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	cg := sandbox.ByCgroupV1
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		cg = sandbox.ByCgroupV2
	}
	if want := (sandbox.Enforcement{Memory: cg, CPU: cg, Processes: cg, OpenFiles: sandbox.ByRlimit}); e != want {
		t.Errorf("Enforcement: %+v; want %+v", e, want)
	}
	for _, l := range []sandbox.Limits{{Memory: -1}, {CPU: 0.001}, {Memory: 64}} {
		if _, err := (sandbox.Runner{Limits: l}).Enforcement(); err == nil {
			t.Errorf("limits %+v accepted", l)
		}
	}
}

// A plugin that allocates past its memory limit dies of it, and the host
// reports it with the limit and what enforced it: a cgroup, whose kernel
// kills it, for a root host; RLIMIT_DATA, under which its allocation
// fails, for a rootless one. The host lives on and starts the next.
func TestSandboxMemoryLimit(t *testing.T) { bothModes(t, testSandboxMemoryLimit) }

func testSandboxMemoryLimit(t *testing.T) {
	limit, enforcer := int64(128<<20), sandbox.ByCgroupV1
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		enforcer = sandbox.ByCgroupV2
	}
	orphan := ""
	if rootless() {
		enforcer = sandbox.ByRlimit
		limit = rlimitMemory()
	} else {
		// The cgroup a dead host left (no process has that ID: the
		// kernel's are below 2^22) goes when the next plugin's is made.
		orphan = "/sys/fs/cgroup/memory/plugkit/4194400-1"
		if enforcer == sandbox.ByCgroupV2 {
			orphan = "/sys/fs/cgroup/plugkit/4194400-1"
		}
		if err := os.MkdirAll(orphan, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Rmdir(orphan) })
	}
	r := sandbox.Runner{Limits: sandbox.Limits{Memory: limit}}
	if e, err := r.Enforcement(); err != nil || e.Memory != enforcer {
		t.Fatalf("Enforcement of a memory limit: %+v, %v; want it by %s", e, err, enforcer)
	}
	c := startSandboxed(t, r)
	if got, err := try(c, "alloc 16"); err != nil || got != "ok" {
		t.Fatalf("allocating 16 MiB under a limit of %d: %q, %v; the plugin: %v", limit, got, err, c.Close())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Conn().Invoke(ctx, probeMethod, wrapperspb.String("alloc 2048"), new(wrapperspb.StringValue)); err == nil {
		t.Fatalf("the plugin allocated 2 GiB past its limit of %d bytes", limit)
	}
	select {
	case <-c.Exited():
	case <-ctx.Done():
		t.Fatal("the plugin still runs after passing its memory limit")
	}
	err := c.Close()
	var mem *sandbox.MemoryLimitError
	if !errors.As(err, &mem) || mem.Limit != limit || mem.Enforcer != enforcer {
		t.Fatalf("Close: %v; want an error wrapping *sandbox.MemoryLimitError with limit %d by %s", err, limit, enforcer)
	}
	t.Logf("reported: %v", mem)
	if !strings.Contains(err.Error(), fmt.Sprintf("memory limit of %d bytes", limit)) {
		t.Errorf("the error %q does not name the limit", err)
	}
	if enforcer == sandbox.ByRlimit && !strings.Contains(mem.Message, "out of memory") && !strings.Contains(mem.Message, "ThreadSanitizer") {
		t.Errorf("the error's Message %q is not the runtime's out-of-memory report", mem.Message)
	}
	if orphan != "" {
		if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the orphaned cgroup %s of a dead host remains: %v", orphan, err)
		}
		// The plugin's cgroups went with it.
		left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/*/plugkit/%d-*", os.Getpid()))
		v2, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/plugkit/%d-*", os.Getpid()))
		if left = append(left, v2...); len(left) > 0 {
			t.Errorf("the plugin's cgroups remain after it exited: %v", left)
		}
	}
	// The host lives on: the next plugin, under the same limit, serves.
	if got := do(t, startSandboxed(t, r), "alloc 16"); got != "ok" {
		t.Errorf("the next plugin under the limit: %s", got)
	}
}

// rlimitMemory is the memory limit the tests give a rootless plugin:
// RLIMIT_DATA counts every thread's stack (this binary uses cgo: 8 MiB a
// thread) and the race detector's shadow memory.
func rlimitMemory() int64 {
	if raceEnabled {
		return 768 << 20
	}
	return 256 << 20
}

// A plugin that fails without a runtime's out-of-memory message is no
// memory-limit death, under RLIMIT_DATA as under a cgroup: killed, it is
// reported as a plain exit.
func TestSandboxMemoryLimitOtherDeath(t *testing.T) { bothModes(t, testSandboxMemoryLimitOtherDeath) }

func testSandboxMemoryLimitOtherDeath(t *testing.T) {
	limit := int64(128 << 20)
	if rootless() {
		limit = rlimitMemory()
	}
	c := startSandboxed(t, sandbox.Runner{Limits: sandbox.Limits{Memory: limit}})
	if err := c.Conn().Invoke(context.Background(), probeMethod, wrapperspb.String("exit 2"), new(wrapperspb.StringValue)); err == nil {
		t.Fatal("the probe answered after exiting")
	}
	select {
	case <-c.Exited():
	case <-time.After(20 * time.Second):
		t.Fatal("the plugin still runs after exiting")
	}
	err := c.Close()
	var mem *sandbox.MemoryLimitError
	if errors.As(err, &mem) || err == nil {
		t.Errorf("Close after an exit that was not the memory limit's: %v; want a plain exit error", err)
	}
}

// A plugin that uses up its processor time (Limits.CPUTime, RLIMIT_CPU,
// in both modes) is killed by the kernel and reported with the limit; a
// plugin killed otherwise before it used as much is not.
func TestSandboxCPUTimeLimit(t *testing.T) { bothModes(t, testSandboxCPUTimeLimit) }

func testSandboxCPUTimeLimit(t *testing.T) {
	r := sandbox.Runner{Limits: sandbox.Limits{CPUTime: 700 * time.Millisecond}}
	if e, err := r.Enforcement(); err != nil || e.CPUTime != sandbox.ByRlimit {
		t.Fatalf("Enforcement of a CPU time limit: %+v, %v; want it by rlimit", e, err)
	}
	c := startSandboxed(t, r)
	// Two busy threads for up to 10 s: the kernel stops them after 1 s of
	// processor time (the limit, rounded up).
	if got, err := try(c, "burn 10000"); err == nil {
		t.Fatalf("the plugin burned 20 s of processor time under a limit of 1 s: %q", got)
	}
	select {
	case <-c.Exited():
	case <-time.After(20 * time.Second):
		t.Fatal("the plugin still runs after using up its processor time")
	}
	err := c.Close()
	var cpu *sandbox.CPUTimeLimitError
	if !errors.As(err, &cpu) || cpu.Limit != time.Second || cpu.Used < 500*time.Millisecond {
		t.Fatalf("Close: %v; want an error wrapping *sandbox.CPUTimeLimitError with a limit of 1s", err)
	}
	t.Logf("reported: %v", cpu)
	if !strings.Contains(err.Error(), "processor time of 1s") {
		t.Errorf("the error %q does not name the limit", err)
	}

	// Killed from outside with its time unspent: a plain crash.
	c = startSandboxed(t, r)
	syscall.Kill(c.Pid(), syscall.SIGKILL)
	select {
	case <-c.Exited():
	case <-time.After(20 * time.Second):
		t.Fatal("the plugin still runs after SIGKILL")
	}
	if err := c.Close(); errors.As(err, &cpu) || err == nil {
		t.Errorf("Close after a SIGKILL from outside: %v; want a plain exit error", err)
	}
}

// try asks the plugin to run one probe command, and returns its error.
func try(c *host.Client, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := new(wrapperspb.StringValue)
	err := c.Conn().Invoke(ctx, probeMethod, wrapperspb.String(cmd), out)
	return out.GetValue(), err
}

// A fork bomb stops at the process limit; the plugin and its host live on.
func TestSandboxProcessLimit(t *testing.T) { bothModes(t, testSandboxProcessLimit) }

func testSandboxProcessLimit(t *testing.T) {
	const limit = 60
	c := startSandboxed(t, sandbox.Runner{Limits: sandbox.Limits{Processes: limit}})
	got := do(t, c, "spawn 500")
	var n int
	if _, err := fmt.Sscanf(got, "started %d, then:", &n); err != nil || n >= limit || !strings.Contains(got, "resource temporarily unavailable") {
		t.Errorf("the fork bomb: %q; want it stopped, by EAGAIN, before %d processes", got, limit)
	}
	// The plugin serves on, and the host still starts processes.
	if got := do(t, c, "loopback"); got != "ok" {
		t.Errorf("the plugin after its fork bomb: %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, "/bin/true").Run(); err != nil {
		t.Errorf("the host starting a process after the plugin's fork bomb: %v", err)
	}
}

// Each of the plugin's processes may hold as many files open as the limit.
func TestSandboxOpenFilesLimit(t *testing.T) { bothModes(t, testSandboxOpenFilesLimit) }

func testSandboxOpenFilesLimit(t *testing.T) {
	c := startSandboxed(t, sandbox.Runner{Limits: sandbox.Limits{OpenFiles: 200}})
	got := do(t, c, "nofile")
	var n int
	if _, err := fmt.Sscanf(got, "opened %d more:", &n); err != nil || n >= 200 || n < 100 || !strings.Contains(got, "too many open files") {
		t.Errorf("opening files up to the limit of 200: %q; want stopped by EMFILE before 200", got)
	}
}

// A CPU-bound plugin gets its share: its cgroup's CPU usage over a busy
// second is about its quota (0.25 CPU), though it keeps two CPUs busy.
func TestSandboxCPULimit(t *testing.T) {
	t.Run(rootMode, func(t *testing.T) {
		const quota = 0.25
		c := startSandboxed(t, sandbox.Runner{Limits: sandbox.Limits{CPU: quota}})
		before, err := cpuUsage(c.Pid())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		do(t, c, "burn 1500")
		wall := time.Since(start)
		after, err := cpuUsage(c.Pid())
		if err != nil {
			t.Fatal(err)
		}
		share := float64(after-before) / float64(wall)
		t.Logf("the plugin used %.3f CPU over %v with a quota of %.2f", share, wall, quota)
		if share > quota*1.5 || share < quota/5 {
			t.Errorf("the plugin used %.3f CPU; want about its quota %.2f (between %.2f and %.2f)", share, quota, quota/5, quota*1.5)
		}
	})
}

// cpuUsage reads the CPU time, in nanoseconds, of the cgroup of process
// pid: cpuacct.usage in cgroup v1, usage_usec of cpu.stat in v2.
func cpuUsage(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
				continue // the hybrid's v2 hierarchy has no cpu controller
			}
			stat, err := os.ReadFile("/sys/fs/cgroup" + f[2] + "/cpu.stat")
			if err != nil {
				return 0, err
			}
			for _, s := range strings.Split(string(stat), "\n") {
				if v, ok := strings.CutPrefix(s, "usage_usec "); ok {
					us, err := strconv.ParseInt(v, 10, 64)
					return time.Duration(us) * time.Microsecond, err
				}
			}
		}
		for _, ctl := range strings.Split(f[1], ",") {
			if ctl == "cpuacct" {
				v, err := os.ReadFile("/sys/fs/cgroup/cpuacct" + f[2] + "/cpuacct.usage")
				if err != nil {
					return 0, err
				}
				ns, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
				return time.Duration(ns), err
			}
		}
	}
	return 0, fmt.Errorf("process %d has no cpu accounting cgroup:\n%s", pid, b)
}
