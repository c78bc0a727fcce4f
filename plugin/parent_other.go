//go:build !linux && !windows && !wasip1

package plugin

import (
	"errors"
	"os"
	"syscall"
)

// deathSignal: only Linux has a parent-death signal; the poll watches.
func deathSignal() (wake <-chan os.Signal, disarm func(), kernelWatches bool) {
	return nil, func() {}, false
}

// hostExists reports whether process pid exists (a zombie counts: these
// systems offer no portable way to tell).
func hostExists(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
