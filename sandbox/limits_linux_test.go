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
// files and, in the plugin's own user namespace, processes; a rootless
// host refuses memory and CPU limits, saying why.
func TestSandboxLimitEnforcement(t *testing.T) { bothModes(t, testSandboxLimitEnforcement) }

func testSandboxLimitEnforcement(t *testing.T) {
	all := sandbox.Runner{Limits: sandbox.Limits{Memory: 64 << 20, CPU: 0.5, Processes: 50, OpenFiles: 100}}
	e, err := all.Enforcement()
	if rootless() {
		if err == nil || !strings.Contains(err.Error(), "Runner.Limits.Memory needs a cgroup") || !strings.Contains(err.Error(), "not root") {
			t.Errorf("Enforcement of a memory limit, rootless: %+v, %v; want an error saying it needs a cgroup", e, err)
		}
		if err := startErr(t, all); err == nil || !strings.Contains(err.Error(), "needs a cgroup") {
			t.Errorf("Start with a memory limit, rootless: %v; want refused", err)
		}
		if err := startErr(t, sandbox.Runner{Limits: sandbox.Limits{CPU: 0.5}}); err == nil || !strings.Contains(err.Error(), "Runner.Limits.CPU needs a cgroup") {
			t.Errorf("Start with a CPU limit, rootless: %v; want refused", err)
		}
		e, err := sandbox.Runner{Limits: sandbox.Limits{Processes: 50, OpenFiles: 100}}.Enforcement()
		if err != nil || e.Processes != sandbox.ByRlimit || e.OpenFiles != sandbox.ByRlimit {
			t.Errorf("Enforcement of processes and open files, rootless: %+v, %v; want both by rlimit", e, err)
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

// A plugin that allocates past its memory limit is killed by the kernel,
// and the host reports it with the limit.
func TestSandboxMemoryLimit(t *testing.T) {
	t.Run(rootMode, func(t *testing.T) {
		const limit = 128 << 20
		// The cgroup a dead host left (no process has that ID: the
		// kernel's are below 2^22) goes when the next plugin's is made.
		orphan := "/sys/fs/cgroup/memory/plugkit/4194400-1"
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
			orphan = "/sys/fs/cgroup/plugkit/4194400-1"
		}
		if err := os.MkdirAll(orphan, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Rmdir(orphan) })
		c := startSandboxed(t, sandbox.Runner{Limits: sandbox.Limits{Memory: limit}})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := c.Conn().Invoke(ctx, probeMethod, wrapperspb.String("alloc 1024"), new(wrapperspb.StringValue)); err == nil {
			t.Fatal("the plugin allocated 1 GiB past its limit of 128 MiB")
		}
		select {
		case <-c.Exited():
		case <-ctx.Done():
			t.Fatal("the plugin still runs after passing its memory limit")
		}
		err := c.Close()
		var mem *sandbox.MemoryLimitError
		if !errors.As(err, &mem) || mem.Limit != limit {
			t.Fatalf("Close: %v; want an error wrapping *sandbox.MemoryLimitError with limit %d", err, limit)
		}
		if !strings.Contains(err.Error(), "memory limit of 134217728 bytes") {
			t.Errorf("the error %q does not name the limit", err)
		}
		if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the orphaned cgroup %s of a dead host remains: %v", orphan, err)
		}
		// The plugin's cgroups went with it.
		left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/*/plugkit/%d-*", os.Getpid()))
		v2, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/plugkit/%d-*", os.Getpid()))
		if left = append(left, v2...); len(left) > 0 {
			t.Errorf("the plugin's cgroups remain after it exited: %v", left)
		}
	})
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
