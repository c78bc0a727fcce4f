package sandbox

import (
	"fmt"
	"time"
)

// Limits bound what a plugin may consume. A zero field sets no bound.
// Runner.Enforcement says what enforces each on this host; Prepare fails,
// saying why, rather than start a plugin with a limit nothing enforces.
type Limits struct {
	// Memory is the most memory, in bytes, the plugin may use. Where the
	// host can make cgroups (root hosts) it is a cgroup's memory limit,
	// for the plugin and the processes it starts together, and the
	// kernel kills a plugin that passes it. Elsewhere (rootless hosts) it
	// is RLIMIT_DATA, for each of the plugin's processes: the private
	// writable memory it maps (a Go plugin's heap and stacks, a C
	// program's malloc arenas), not the address space it only reserves;
	// an allocation past it fails, and a plugin that dies of that is
	// reported as such when it said so on its standard error (see
	// MemoryLimitError). RLIMIT_DATA does not count shared memory, so
	// there the seccomp filter refuses (EPERM) every MAP_SHARED mapping,
	// memfd_create and System V shared memory: a plugin that needs them
	// needs a root host's cgroup. The main thread's stack (RLIMIT_STACK)
	// is bounded by the same figure. Count more than the heap:
	// threads' stacks (8 MiB each in a cgo program), and the race
	// detector's shadow memory, several times the heap. Either way the host reports a *MemoryLimitError as
	// the Cause of the plugin's exit error.
	Memory int64
	// CPU is the processor time the plugin may use, in CPUs (0.5: half of
	// one), measured over each 100 ms: a cgroup's CPU quota (root hosts).
	// A rootless host refuses it: a share needs a cgroup with the cpu
	// controller, and an rlimit cannot give one (RLIMIT_CPU bounds the
	// total seconds, and kills the plugin when they run out).
	CPU float64
	// Processes bounds the plugin's processes and threads together: a
	// cgroup's pids limit (root hosts) or, in a user namespace of the
	// plugin's own (rootless hosts), RLIMIT_NPROC, which the kernel
	// counts in that namespace alone.
	Processes int
	// OpenFiles bounds the descriptors each of the plugin's processes may
	// hold open: RLIMIT_NOFILE, soft and hard.
	OpenFiles int
	// CPUTime bounds the processor time, user and system together, the
	// plugin's process may use in its whole life, rounded up to whole
	// seconds: RLIMIT_CPU, on every host, root or not. It is a total, no
	// share (for a share, CPU): the kernel kills the plugin (SIGKILL)
	// when it is spent, and the host reports a *CPUTimeLimitError. Each
	// process the plugin starts has a total of its own; the sandbox's own
	// start, a few milliseconds, counts in the plugin's.
	CPUTime time.Duration
}

// cpuSeconds is CPUTime in whole seconds, rounded up.
func (l Limits) cpuSeconds() int64 {
	return int64((l.CPUTime + time.Second - 1) / time.Second)
}

// CPUTimeLimitError reports a plugin the kernel killed for using up its
// processor time (Limits.CPUTime): it died of SIGKILL or SIGXCPU having
// used at least 90% of it, as the kernel's sampled usage says (a plugin
// killed from outside that late in its time is reported so too).
type CPUTimeLimitError struct {
	// Limit is the time it had, in whole seconds (RLIMIT_CPU).
	Limit time.Duration
	// Used is the processor time it used, user and system.
	Used time.Duration
}

// Error names the limit and what to do.
func (e *CPUTimeLimitError) Error() string {
	return fmt.Sprintf("sandbox: the kernel killed the plugin for using up its processor time of %v (Runner.Limits.CPUTime, by rlimit RLIMIT_CPU; it used %v): raise the limit, or find what keeps the plugin busy", e.Limit, e.Used.Round(time.Millisecond))
}

// What enforces a limit (Enforcement's fields).
const (
	ByCgroupV1 = "cgroup v1"
	ByCgroupV2 = "cgroup v2"
	ByRlimit   = "rlimit"
)

// Enforcement says what enforces each of a Runner's limits on this host:
// ByCgroupV1, ByCgroupV2 or ByRlimit, or "" for a limit not set.
type Enforcement struct {
	Memory, CPU, Processes, OpenFiles, CPUTime string
}

// MemoryLimitError reports a plugin that died of its memory limit
// (Limits.Memory).
//
// Under a cgroup (ByCgroupV1, ByCgroupV2) the kernel killed it, and the
// cgroup's count of such kills says so: the report is certain. Under
// RLIMIT_DATA (ByRlimit) nothing kills the plugin: an allocation past the
// limit fails, and most programs die of that. The sandbox reports it when
// the plugin exited with a failure after writing, on its standard error,
// one of the messages the usual runtimes print when an allocation fails:
// Go's "fatal error: runtime: out of memory" (and its race detector's
// "ThreadSanitizer failed to allocate ... (errno: 12)"), Rust's "memory
// allocation of N bytes failed", C++'s std::bad_alloc, Python's
// MemoryError. A plugin that survives a failed allocation, prints nothing,
// prints something else or closes its stderr is reported as any other
// exit: the detection cannot see a failure the plugin does not name, and
// could be fooled by a plugin that prints one of those lines and then
// fails for another reason.
type MemoryLimitError struct {
	// Limit is the limit it passed, in bytes.
	Limit int64
	// Enforcer is what enforced it (ByCgroupV1, ByCgroupV2, ByRlimit).
	Enforcer string
	// Message, with ByRlimit, is the plugin's line on standard error that
	// reported the failed allocation.
	Message string
}

// Error names the limit and what to do.
func (e *MemoryLimitError) Error() string {
	if e.Enforcer == ByRlimit {
		return fmt.Sprintf("sandbox: the plugin died when an allocation failed at its memory limit of %d bytes (Runner.Limits.Memory, by %s RLIMIT_DATA; it said %q): raise the limit, or find what the plugin allocates", e.Limit, e.Enforcer, e.Message)
	}
	return fmt.Sprintf("sandbox: the kernel killed the plugin for passing its memory limit of %d bytes (Runner.Limits.Memory, by %s): raise the limit, or find what the plugin allocates", e.Limit, e.Enforcer)
}

// check refuses negative or out-of-range limits.
func (l Limits) check() error {
	if l.Memory < 0 || l.CPU < 0 || l.Processes < 0 || l.OpenFiles < 0 || l.CPUTime < 0 {
		return fmt.Errorf("sandbox: Runner.Limits %+v holds a negative limit: give positive bounds, or 0 for none", l)
	}
	if l.CPU > 0 && l.CPU < 0.01 {
		return fmt.Errorf("sandbox: Runner.Limits.CPU %g is below 0.01 CPU, the smallest quota the sandbox sets (1 ms per 100 ms)", l.CPU)
	}
	if l.Memory > 0 && l.Memory < 8<<20 {
		return fmt.Errorf("sandbox: Runner.Limits.Memory %d is below 8 MiB, too little for a plugin to start: give bytes, not MiB", l.Memory)
	}
	return nil
}

// cgroupNeeded reports whether a limit needs a cgroup wherever one is
// available (Processes uses one when it is).
func (l Limits) cgroupNeeded() bool {
	return l.Memory > 0 || l.CPU > 0 || l.Processes > 0
}
