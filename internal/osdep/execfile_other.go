//go:build !linux

package osdep

import (
	"os"
	"os/exec"
)

// ExecOpenFile says whether ExecFile can make a command execute an open
// file rather than its path: not without /proc/self/fd.
const ExecOpenFile = false

// ExecFile leaves cmd executing its path: without /proc/self/fd there is
// no portable way to execute an open file, so on these systems a file
// swapped between a check and the exec is not caught.
func ExecFile(cmd *exec.Cmd, f *os.File) {}
