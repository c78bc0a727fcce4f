//go:build windows

package protocheck

import "testing"

// mkfifo skips: Windows has no FIFOs in the file system (its named pipes
// live under \\.\pipe\, never inside a directory of .proto files).
func mkfifo(t *testing.T, _ string) {
	t.Helper()
	t.Skip("Windows has no FIFOs in the file system")
}
