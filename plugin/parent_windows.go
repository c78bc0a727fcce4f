//go:build windows

package plugin

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// parentProbe watches the parent's process handle, opened at this
// program's start (atStart): Windows never re-parents a process, and its
// parent's pid may be reused after the parent exits, so the pid tells
// nothing. The handle, once open, keeps naming the parent and is
// signalled once it exits. A parent that is already gone (no such
// process) counts as gone; one this process may not open (another
// user's) cannot be watched and never counts as gone. (A check of the
// parent's creation time against ours, for a pid reused before the
// handle was opened, made Wine's parents look reborn: not done.)
func parentProbe(func(string) (string, bool)) (gone func() bool, release func()) {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(os.Getppid()))
	if err != nil {
		dead := errors.Is(err, windows.ERROR_INVALID_PARAMETER)
		return func() bool { return dead }, func() {}
	}
	return func() bool {
			ev, err := windows.WaitForSingleObject(h, 0)
			return err == nil && ev == windows.WAIT_OBJECT_0
		}, func() {
			windows.CloseHandle(h)
		}
}

// deathSignal: Windows has no parent-death signal; the handle is polled.
func deathSignal() (wake <-chan os.Signal, disarm func()) { return nil, func() {} }
