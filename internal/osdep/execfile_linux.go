package osdep

import (
	"os"
	"os/exec"
	"strconv"
)

// ExecOpenFile says whether ExecFile can make a command execute an open
// file rather than its path.
const ExecOpenFile = true

// ExecFile makes cmd execute the open file f rather than its path: f
// becomes the child's next extra descriptor and the child executes
// /proc/self/fd/N, which is that descriptor, so that what runs is the file
// the caller checked even if the path now names another one. Interpreted
// scripts work too: the interpreter opens the same descriptor.
func ExecFile(cmd *exec.Cmd, f *os.File) {
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	cmd.Path = "/proc/self/fd/" + strconv.Itoa(fd)
	cmd.Err = nil
}
