//go:build wasip1

package osdep

import (
	"errors"
	"io/fs"
	"os"
)

// UnixSockets reports whether plugins listen on unix sockets by default.
// A WebAssembly guest opens no sockets: it serves over its standard input
// and output.
const UnixSockets = false

// ExecBits reports whether file modes carry the permission to execute.
const ExecBits = true

// PathSeparators are the characters that make a command a path.
const PathSeparators = "/"

// Graceful reports whether a process can be asked to stop without being
// killed: a WebAssembly guest gets no signals.
const Graceful = false

// errNoLocks reports that a WebAssembly guest has no file locks.
var errNoLocks = errors.New("file locks are not available in a WebAssembly (wasip1) guest")

// TryLock fails: WASI preview 1 has no file locks.
func TryLock(*os.File) error { return errNoLocks }

// OpenNoFollow opens path like os.OpenFile, refusing a symbolic link as
// its last element (checked with Lstat first: WASI has no O_NOFOLLOW
// flag Go exposes).
func OpenNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
	}
	return os.OpenFile(path, flag, perm)
}

// OpenNoBlock opens path for reading (a guest sees no FIFOs or devices).
func OpenNoBlock(path string) (*os.File, error) { return os.Open(path) }

// FileOwner reports no owner: a guest's files carry none.
func FileOwner(fs.FileInfo) (uid int, ok bool) { return 0, false }

// FileID reports no device and inode: a WebAssembly guest discovers no
// plugin binaries.
func FileID(fs.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }
