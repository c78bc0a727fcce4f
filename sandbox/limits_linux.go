package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/fs2"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/sandbox/internal/trampoline"
)

// cgroupRoot is where the cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupParent is the cgroup, under the root of each hierarchy, that
// holds one cgroup per sandboxed plugin.
const cgroupParent = "plugkit"

// cgroupSeq numbers this host's plugin cgroups.
var cgroupSeq atomic.Uint64

// cgroupVersion says which cgroups a root host bounds its plugins with:
// v2 where the unified hierarchy is mounted alone, else v1 (the hybrid
// layouts put the memory, pids and cpu controllers there).
func cgroupVersion() (string, error) {
	if cgroups.IsCgroup2UnifiedMode() {
		return ByCgroupV2, nil
	}
	for _, c := range []string{"memory", "pids", "cpu"} {
		if _, err := os.Stat(cgroupRoot + "/" + c + "/cgroup.procs"); err != nil {
			return "", fmt.Errorf("neither cgroup v2 alone nor the cgroup v1 %s controller is mounted at %s (%v): mount cgroup2 on %s, or boot with the controller enabled", c, cgroupRoot, err, cgroupRoot)
		}
	}
	return ByCgroupV1, nil
}

// enforcement says what enforces each of r.Limits in mode, or why one
// cannot be.
func (r Runner) enforcement(mode trampoline.Mode) (Enforcement, error) {
	l := r.Limits
	var e Enforcement
	if err := l.check(); err != nil {
		return e, err
	}
	if l.OpenFiles > 0 {
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && mode != trampoline.Root && uint64(l.OpenFiles) > lim.Max {
			return e, fmt.Errorf("sandbox: Runner.Limits.OpenFiles %d is above this host's hard limit of open files, %d, which only root may raise: lower it", l.OpenFiles, lim.Max)
		}
		e.OpenFiles = ByRlimit
	}
	if l.CPUTime > 0 {
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_CPU, &lim); err == nil && mode != trampoline.Root && uint64(l.cpuSeconds()) > lim.Max {
			return e, fmt.Errorf("sandbox: Runner.Limits.CPUTime %v is above this host's hard limit of processor time, %d s, which only root may raise: lower it", l.CPUTime, lim.Max)
		}
		e.CPUTime = ByRlimit
	}
	if !l.cgroupNeeded() {
		return e, nil
	}
	cg, cgErr := "", fmt.Errorf("the host runs as user %d, not root, and the sandbox makes cgroups only as root (it does not use a delegated cgroup v2 subtree with the cpu controller, systemd's Delegate=yes, yet)", os.Geteuid())
	if mode == trampoline.Root {
		cg, cgErr = cgroupVersion()
	}
	if l.Memory > 0 {
		e.Memory = cg
		if cgErr != nil {
			e.Memory = ByRlimit // RLIMIT_DATA: see Limits.Memory
		}
	}
	if l.CPU > 0 {
		if cgErr != nil {
			return e, fmt.Errorf("sandbox: Runner.Limits.CPU needs a cgroup with the cpu controller, and this host has none for its plugins: %v. An rlimit cannot give a share of a CPU (RLIMIT_CPU bounds total seconds). Run the host as root, or leave CPU 0", cgErr)
		}
		e.CPU = cg
	}
	if l.Processes > 0 {
		switch {
		case cgErr == nil:
			e.Processes = cg
		case mode == trampoline.UserNS:
			e.Processes = ByRlimit // counted in the plugin's own user namespace
		default:
			return e, fmt.Errorf("sandbox: Runner.Limits.Processes needs a cgroup or a user namespace of the plugin's own (without one RLIMIT_NPROC would count every process of the host's user): %v", cgErr)
		}
	}
	return e, nil
}

// applyLimits sets the launch up for the limits of r as e enforces them:
// the rlimits in the spec, and, for those a cgroup enforces, a cgroup of
// the plugin's own that the trampoline joins first thing (through
// descriptors of its cgroup.procs files, opened here: the kernel checks
// the opener's rights), whose memory events tell, when the plugin exits,
// whether its memory limit killed it, and which is removed then.
func (r Runner) applyLimits(l *host.Launch, sp *trampoline.Spec, e Enforcement) error {
	sp.NoFile = r.Limits.OpenFiles
	if e.Processes == ByRlimit {
		sp.NProc = r.Limits.Processes
	}
	if e.Memory == ByRlimit {
		sp.Data, sp.NoSharedMemory = r.Limits.Memory, true
		watchOOM(l, r.Limits.Memory)
	}
	if e.CPUTime == ByRlimit {
		sp.CPU = r.Limits.cpuSeconds()
		watchCPUTime(l, time.Duration(sp.CPU)*time.Second)
	}
	if (e.Memory == "" || e.Memory == ByRlimit) && e.CPU == "" && (e.Processes == "" || e.Processes == ByRlimit) {
		return nil
	}
	m, files, err := newCgroup(r.Limits)
	if err != nil {
		return err
	}
	base := 3 + len(l.Cmd.ExtraFiles)
	for i, f := range files {
		l.Cmd.ExtraFiles = append(l.Cmd.ExtraFiles, f)
		sp.Cgroups = append(sp.Cgroups, base+i)
	}
	prev, limit, enforcer := l.Exited, r.Limits.Memory, e.Memory
	l.Exited = func(st *os.ProcessState) error {
		var cause error
		if prev != nil {
			cause = prev(st)
		}
		for _, f := range files {
			f.Close()
		}
		if n, err := m.OOMKillCount(); err == nil && n > 0 && limit > 0 && st != nil && cause == nil {
			cause = &MemoryLimitError{Limit: limit, Enforcer: enforcer}
		}
		m.Destroy()
		return cause
	}
	return nil
}

// newCgroup makes a cgroup for one plugin, with limits lim, and opens
// the cgroup.procs files the trampoline joins it through.
func newCgroup(lim Limits) (cgroups.Manager, []*os.File, error) {
	removeOrphans()
	name := fmt.Sprintf("%s/%d-%d", cgroupParent, os.Getpid(), cgroupSeq.Add(1))
	res := &cgroups.Resources{SkipDevices: true}
	if lim.Memory > 0 {
		res.Memory = lim.Memory
	}
	if lim.CPU > 0 {
		res.CpuPeriod = 100000
		res.CpuQuota = int64(lim.CPU * 100000)
	}
	if lim.Processes > 0 {
		n := int64(lim.Processes)
		res.PidsLimit = &n
	}
	cg := &cgroups.Cgroup{Path: "/" + name, Resources: res}
	var m cgroups.Manager
	var err error
	v2 := cgroups.IsCgroup2UnifiedMode()
	if v2 {
		m, err = fs2.NewManager(cg, cgroupRoot+"/"+name)
	} else {
		m, err = fs.NewManager(cg, nil)
	}
	if err == nil {
		if err = m.Apply(-1); err == nil {
			err = m.Set(res)
		}
	}
	if err != nil {
		if m != nil {
			m.Destroy()
		}
		return nil, nil, fmt.Errorf("sandbox: making the plugin's cgroup %s for Runner.Limits: %w", name, err)
	}
	paths := m.GetPaths()
	var dirs []string
	if v2 {
		dirs = []string{paths[""]}
	} else {
		seen := map[string]bool{}
		for _, c := range []string{"memory", "pids", "cpu", "cpuacct"} {
			if d := paths[c]; d != "" && !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
		}
	}
	var files []*os.File
	for _, d := range dirs {
		f, err := os.OpenFile(d+"/cgroup.procs", os.O_WRONLY, 0)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			m.Destroy()
			return nil, nil, fmt.Errorf("sandbox: opening the plugin's cgroup: %w", err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		m.Destroy()
		return nil, nil, errors.New("sandbox: the plugin's cgroup has no directory to join")
	}
	return m, files, nil
}

// removeOrphans removes the plugin cgroups of hosts that died before
// their plugins' cgroups could be removed (named after the host's process
// ID, which no longer runs): rmdir removes only those no process is in.
func removeOrphans() {
	dirs, _ := filepath.Glob(cgroupRoot + "/*/" + cgroupParent + "/*-*")
	v2, _ := filepath.Glob(cgroupRoot + "/" + cgroupParent + "/*-*")
	for _, d := range append(dirs, v2...) {
		pid, _, ok := strings.Cut(filepath.Base(d), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 || n == os.Getpid() {
			continue
		}
		if err := syscall.Kill(n, 0); errors.Is(err, syscall.ESRCH) {
			syscall.Rmdir(d)
		}
	}
}

// watchCPUTime makes the launch report a plugin the kernel killed for
// using up its processor time, limit, as a *CPUTimeLimitError: one that
// died of SIGKILL (or of SIGXCPU, whose default is to end a process)
// having used at least half of it. The kernel checks the limit against
// the tick-sampled user and system time, which charges a whole tick to
// the thread running when it fires; the usage reported at exit is scaled
// to the scheduler's exact run time, which on a loaded machine can be
// well below the sampled figure (900 ms of a 1 s limit was too strict
// under a parallel test run). A SIGKILL from elsewhere after half the
// limit is reported as the limit too.
func watchCPUTime(l *host.Launch, limit time.Duration) {
	prev := l.Exited
	l.Exited = func(st *os.ProcessState) error {
		var cause error
		if prev != nil {
			cause = prev(st)
		}
		if cause != nil || st == nil {
			return cause
		}
		ws, ok := st.Sys().(syscall.WaitStatus)
		used := st.UserTime() + st.SystemTime()
		if ok && ws.Signaled() && (ws.Signal() == syscall.SIGKILL || ws.Signal() == syscall.SIGXCPU) && used >= limit/2 {
			return &CPUTimeLimitError{Limit: limit, Used: used}
		}
		return nil
	}
}
