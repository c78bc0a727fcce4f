package testutil

import "os"

// Kill kills process pid at once (SIGKILL; TerminateProcess on Windows),
// as a crash would, and ignores a process that is already gone.
func Kill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
