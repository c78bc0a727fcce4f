//go:build windows

package osdep

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// UnixSockets reports whether plugins listen on unix sockets by default.
// Windows plugins listen on loopback TCP, as go-plugin's do there.
const UnixSockets = false

// ExecBits reports whether file modes carry the permission to execute.
const ExecBits = false

// PathSeparators are the characters that make a command a path.
const PathSeparators = `/\:`

// Graceful reports whether a process can be asked to stop without being
// killed (SIGTERM); on Windows a process is only killed.
const Graceful = false

// TryLock takes an exclusive lock on f's first byte (LockFileEx) without
// waiting. It returns ErrLocked when another open file holds it. The
// system drops the lock when the handle closes, also when its process dies.
func TryLock(f *os.File) error {
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return ErrLocked
	}
	return err
}

// OpenNoFollow opens path like os.OpenFile, but refuses a symbolic link
// (or another reparse point Lstat reports as one) as its last element; the
// error wraps ErrSymlink. Windows has no O_NOFOLLOW: the check comes
// before the open. It does not check what it opened: callers Stat the file
// and refuse what is not regular.
func OpenNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
	}
	return os.OpenFile(path, flag, perm)
}

// OpenNoBlock opens path for reading. Windows has no FIFOs in the file
// system's namespace, so this is os.Open; unix adds O_NONBLOCK.
func OpenNoBlock(path string) (*os.File, error) { return os.Open(path) }

// FileOwner cannot tell a file's owner as a uid on Windows (whose
// reattachable plugins listen on loopback TCP): ok is always false.
func FileOwner(fs.FileInfo) (uid int, ok bool) { return 0, false }

// FileID cannot tell a file's device and inode from its FileInfo on
// Windows (os.SameFile asks the handle): ok is always false, and callers
// treat every path as a file of its own.
func FileID(fs.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }
