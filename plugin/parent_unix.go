//go:build !windows && !wasip1

package plugin

import (
	"os"
	"strconv"
)

// parentProbe reports the parent gone when this process was re-parented:
// on unix an orphan's parent becomes init or a subreaper, so its parent
// pid changes. The parent is the one this process has when parentProbe
// runs, at its start (atStart); a host that died even before that, and
// said who it was (EnvHostPID), is reported gone at once.
func parentProbe(lookup func(string) (string, bool)) (gone func() bool, release func()) {
	parent := os.Getppid()
	if hostGoneBeforeStart(lookup, parent) {
		return func() bool { return true }, func() {}
	}
	return func() bool { return os.Getppid() != parent }, func() {}
}

// hostGoneBeforeStart reports whether the host named by EnvHostPID died
// before this program's start: the host is not parent, and no longer
// exists (hostExists, per system).
func hostGoneBeforeStart(lookup func(string) (string, bool), parent int) bool {
	v, _ := lookup(EnvHostPID)
	pid, err := strconv.Atoi(v)
	if err != nil || pid <= 0 || pid == parent {
		return false
	}
	return !hostExists(pid)
}
