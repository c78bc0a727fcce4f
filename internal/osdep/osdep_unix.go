//go:build !windows

package osdep

import (
	"errors"
	"os"
	"syscall"
)

// UnixSockets reports whether plugins listen on unix sockets by default.
const UnixSockets = true

// ExecBits reports whether file modes carry the permission to execute.
const ExecBits = true

// PathSeparators are the characters that make a command a path.
const PathSeparators = "/"

// Graceful reports whether a process can be asked to stop without being
// killed (SIGTERM); on Windows a process is only killed.
const Graceful = true

// TryLock takes an exclusive advisory lock on f (flock) without waiting.
// It returns ErrLocked when another open file holds it. The lock goes
// with the last descriptor of f, so a process that dies drops it.
func TryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}
