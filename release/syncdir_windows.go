//go:build windows

package release

// syncDir does nothing: Windows has no directory fsync.
func syncDir(string) {}
