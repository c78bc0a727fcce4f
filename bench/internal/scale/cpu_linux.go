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
// /proc/PID/task/*/schedstat, in ns; threads that ended before are not
// counted); the returned function, called once every child was reaped,
// reads them again: the host's is its own getrusage, the plugins' what
// the reaped children used in all (getrusage of the children) less what
// they had used before.
func closeCPU(plugins bool) (end func() (host, plugins time.Duration)) {
	var before time.Duration
	if plugins {
		for _, pid := range childPIDs() {
			before += runTime(pid)
		}
	}
	host0, children0 := rusage(syscall.RUSAGE_SELF), rusage(syscall.RUSAGE_CHILDREN)
	return func() (host, p time.Duration) {
		host = rusage(syscall.RUSAGE_SELF) - host0
		if plugins {
			p = rusage(syscall.RUSAGE_CHILDREN) - children0 - before
		}
		return host, p
	}
}

// rusage is the user and system CPU time of who (RUSAGE_SELF or
// RUSAGE_CHILDREN).
func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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

// runTime is the CPU time pid's threads have used so far.
func runTime(pid int) time.Duration {
	stats, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	var sum time.Duration
	for _, s := range stats {
		data, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// RunTime is the CPU time pid's threads have used so far (their
// schedstat): what a process costs, read from outside it.
func RunTime(pid int) time.Duration { return runTime(pid) }
