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

// UnderWine reports whether this Windows program runs under Wine (its
// ntdll exports wine_get_version), for the few tests whose premise Wine
// does not meet; it never changes what a test asserts on Windows.
func UnderWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// ownedByMe reports whether this process's user owns the file fi: never
// known on Windows.
func ownedByMe(fs.FileInfo) bool { return false }
