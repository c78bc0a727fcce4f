// Package osdep holds what differs between the operating systems plugkit
// builds for (Linux, the BSDs and macOS, Windows): facts about the system
// as constants, decisions made from them as pure functions that are tested
// on every system, and the few system calls behind build tags (file locks).
// Packages ask it instead of testing runtime.GOOS or calling syscall
// themselves, so that nothing unix-only is compiled on Windows.
package osdep
