//go:build windows

package testutil

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/windows"
)

// Exists reports whether process pid exists and has not exited; one this
// user may not open exists too.
func Exists(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err != nil || ev == uint32(windows.WAIT_TIMEOUT)
}

// FileGID returns the group that owns the file fi describes; -1 where
// files have no unix group (Windows).
func FileGID(fs.FileInfo) int { return -1 }
