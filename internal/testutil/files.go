package testutil

import (
	"os"
	"runtime"
	"syscall"
)

// WriteHoldingForks writes data to path with mode while holding off
// forks (syscall.ForkLock, as os/exec's own pipes do). A process forked
// by a test running in parallel while the file is open for writing holds
// it open until its exec, and a program started from the file in that
// moment fails with "text file busy" (ETXTBSY): write every file a test
// later runs this way.
func WriteHoldingForks(path string, data []byte, mode os.FileMode) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return os.WriteFile(path, data, mode)
}

// PlaceBinary makes the program at from also the file to, as a test that
// needs a name or directory of its own for a shared build does: a hard
// link, which costs nothing, or a copy (written with WriteHoldingForks)
// where the file system has no links, and always on Windows, which
// refuses to remove a running program's file under any of its names: one
// test's cleanup would fail while a parallel test ran the same build
// through its own link.
func PlaceBinary(from, to string) error {
	if runtime.GOOS != "windows" && os.Link(from, to) == nil {
		return nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return WriteHoldingForks(to, data, 0o755)
}
