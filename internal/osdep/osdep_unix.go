//go:build !windows && !wasip1

package osdep

import (
	"errors"
	"io/fs"
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

// OpenNoFollow opens path like os.OpenFile, but refuses a symbolic link as
// its last element (O_NOFOLLOW; the error wraps ErrSymlink) and never
// blocks in open on a FIFO or a device (O_NONBLOCK). It does not check
// what it opened: callers Stat the file and refuse what is not regular.
func OpenNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		// Linux and macOS say ELOOP, FreeBSD EMLINK: ask the file itself.
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
		}
		return nil, err
	}
	return f, nil
}

// OpenNoBlock opens path for reading, following symbolic links, without
// blocking in open when it turns out to be a FIFO or a device
// (O_NONBLOCK): a FIFO swapped in for a file after it was looked at must
// not hang its reader. Callers Stat the file and refuse what is not
// regular.
func OpenNoBlock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}

// FileOwner returns the uid that owns the file fi describes; ok is false
// where files have no unix owner.
func FileOwner(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// FileID returns the device and inode of the file fi describes; ok is
// false when fi does not carry them.
func FileID(fi fs.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true // Dev is an int32 on darwin
}
