//go:build !windows

package testutil

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// Exists reports whether process pid exists (a zombie does): signal 0
// finds it, or it belongs to a user this one may not signal.
func Exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// FileGID returns the group that owns the file fi describes; -1 where
// files have no unix group (Windows).
func FileGID(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Gid)
	}
	return -1
}

// UnderWine reports whether this program is a Windows one under Wine:
// never, here.
func UnderWine() bool { return false }

// ownedByMe reports whether this process's user owns the file fi.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
