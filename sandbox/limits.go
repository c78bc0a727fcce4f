package sandbox

import "fmt"

// Limits bound what a plugin may consume. A zero field sets no bound.
// Runner.Enforcement says what enforces each on this host; Prepare fails,
// saying why, rather than start a plugin with a limit nothing enforces.
type Limits struct {
	// Memory is the most memory, in bytes, the plugin and the processes
	// it starts may use together: a cgroup's memory limit (root hosts).
	// The kernel kills a plugin that passes it, and the host reports a
	// *MemoryLimitError as the Cause of its exit error.
	Memory int64
	// CPU is the processor time the plugin may use, in CPUs (0.5: half of
	// one), measured over each 100 ms: a cgroup's CPU quota (root hosts).
	CPU float64
	// Processes bounds the plugin's processes and threads together: a
	// cgroup's pids limit (root hosts) or, in a user namespace of the
	// plugin's own (rootless hosts), RLIMIT_NPROC, which the kernel
	// counts in that namespace alone.
	Processes int
	// OpenFiles bounds the descriptors each of the plugin's processes may
	// hold open: RLIMIT_NOFILE, soft and hard.
	OpenFiles int
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
	Memory, CPU, Processes, OpenFiles string
}

// MemoryLimitError reports a plugin the kernel killed for passing its
// memory limit (Limits.Memory).
type MemoryLimitError struct {
	// Limit is the limit it passed, in bytes.
	Limit int64
	// Enforcer is what enforced it (ByCgroupV1, ByCgroupV2).
	Enforcer string
}

// Error names the limit and what to do.
func (e *MemoryLimitError) Error() string {
	return fmt.Sprintf("sandbox: the kernel killed the plugin for passing its memory limit of %d bytes (Runner.Limits.Memory, by %s): raise the limit, or find what the plugin allocates", e.Limit, e.Enforcer)
}

// check refuses negative or out-of-range limits.
func (l Limits) check() error {
	if l.Memory < 0 || l.CPU < 0 || l.Processes < 0 || l.OpenFiles < 0 {
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
