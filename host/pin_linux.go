package host

import (
	"os"
	"os/exec"
	"strconv"
)

// execPinned makes cmd execute the open file f rather than its path: f
// becomes the child's first extra descriptor and the child executes
// /proc/self/fd/N, which is that descriptor, so that what runs is what was
// hashed even if the path now names another file. Interpreted scripts work
// too: the interpreter opens the same descriptor.
func execPinned(cmd *exec.Cmd, f *os.File) {
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	cmd.Path = "/proc/self/fd/" + strconv.Itoa(fd)
	cmd.Err = nil
}
