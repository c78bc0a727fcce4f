//go:build !linux

package trampoline

// Init does nothing: the sandbox, and with it the re-exec, is Linux's
// alone.
func Init() {}
