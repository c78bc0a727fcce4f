//go:build windows

package host

import (
	"errors"

	"golang.org/x/sys/windows"
)

// alive reports whether a process pid exists and has not exited (its
// handle is not yet signalled); one this user may not open exists too.
func alive(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err != nil || ev == uint32(windows.WAIT_TIMEOUT)
}
