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
// process), or whose pid now names a process created after this one (the
// parent died and its pid was reused before the handle was opened),
// counts as gone; one this process may not open (another user's) cannot
// be watched and never counts as gone.
func parentProbe(func(string) (string, bool)) (gone func() bool, release func()) {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(os.Getppid()))
	if err != nil {
		dead := errors.Is(err, windows.ERROR_INVALID_PARAMETER)
		return func() bool { return dead }, func() {}
	}
	if bornAfterUs(h) {
		windows.CloseHandle(h)
		return func() bool { return true }, func() {}
	}
	return func() bool {
			ev, err := windows.WaitForSingleObject(h, 0)
			return err == nil && ev == windows.WAIT_OBJECT_0
		}, func() {
			windows.CloseHandle(h)
		}
}

// bornAfterUs reports whether process h was created after this process:
// then it cannot be the parent, only a process that took its pid.
func bornAfterUs(h windows.Handle) bool {
	var theirs, ours, exit, kernel, user windows.Filetime
	if windows.GetProcessTimes(h, &theirs, &exit, &kernel, &user) != nil ||
		windows.GetProcessTimes(windows.CurrentProcess(), &ours, &exit, &kernel, &user) != nil {
		return false
	}
	return theirs.Nanoseconds() > ours.Nanoseconds()
}

// deathSignal: Windows has no parent-death signal; the handle is polled.
func deathSignal() (wake <-chan os.Signal, disarm func(), kernelWatches bool) {
	return nil, func() {}, false
}
