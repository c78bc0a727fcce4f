package scale

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// closeCPU measures the CPU time a close of every plugin costs, on each
// side: it reads this process's CPU time and, with plugins, that of each
// of its child processes so far (the sum of their threads' run time, from
// /proc/PID/task/*/schedstat, in ns, and how often they were switched to;
// threads that ended before are not counted); the returned function,
// called once every child was reaped, reads them again: the host's is its
// own getrusage, the plugins' what the reaped children used in all
// (getrusage of the children: CPU time, and voluntary and involuntary
// context switches) less what they had used before.
func closeCPU(plugins bool) (end func() (host, plugins time.Duration, switches int64)) {
	var before time.Duration
	var switched int64
	if plugins {
		for _, pid := range childPIDs() {
			t, n := schedStat(pid)
			before += t
			switched += n
		}
	}
	host0, _ := rusage(syscall.RUSAGE_SELF)
	children0, switches0 := rusage(syscall.RUSAGE_CHILDREN)
	return func() (host, p time.Duration, switches int64) {
		host, _ = rusage(syscall.RUSAGE_SELF)
		host -= host0
		if plugins {
			children, n := rusage(syscall.RUSAGE_CHILDREN)
			p, switches = children-children0-before, n-switches0-switched
		}
		return host, p, switches
	}
}

// rusage is the user and system CPU time of who (RUSAGE_SELF or
// RUSAGE_CHILDREN), and its context switches, voluntary and not.
func rusage(who int) (time.Duration, int64) {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw + ru.Nivcsw
}

// childPIDs lists this process's child processes.
func childPIDs() []int {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var pids []int
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// schedStat is the CPU time pid's threads have used so far, and how many
// times they were switched to (their schedstat's first and third fields).
func schedStat(pid int) (run time.Duration, switches int64) {
	stats, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	for _, s := range stats {
		data, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) == 3 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			n, _ := strconv.ParseInt(f[2], 10, 64)
			run += time.Duration(ns)
			switches += n
		}
	}
	return run, switches
}

// RunTime is the CPU time pid's threads have used so far (their
// schedstat): what a process costs, read from outside it.
func RunTime(pid int) time.Duration {
	run, _ := schedStat(pid)
	return run
}
