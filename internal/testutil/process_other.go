//go:build !linux

package testutil

// Running reports whether process pid runs. Without /proc to tell a
// zombie from a live process, it is Exists: an orphan's new parent
// (launchd, init) reaps it soon after it exits.
func Running(pid int) bool { return Exists(pid) }
