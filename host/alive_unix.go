//go:build !windows && !wasip1

package host

import (
	"errors"
	"syscall"
)

// alive reports whether a process pid exists (signal 0); one this user
// may not signal exists too.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
