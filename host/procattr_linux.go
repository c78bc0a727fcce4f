package host

import (
	"os/exec"
	"syscall"
)

// setProcAttr asks the kernel to kill the plugin if the host dies, even
// for plugins that do not watch their parent themselves (plugkit plugins
// do).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
