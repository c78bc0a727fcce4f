//go:build !linux

package host

import "os"

// reapWhenExited runs reap, which waits for process p and handles its
// exit, in a goroutine of its own (Linux has one reaper for all plugins:
// procattr_linux.go).
func reapWhenExited(_ *os.Process, reap func()) { go reap() }
