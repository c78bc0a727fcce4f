//go:build !linux && !windows && !wasip1

package host

import (
	"os/exec"
	"syscall"
)

func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// sysProc is what a system adds to a plugin process; nothing on unix,
// where the process group is the plugin's pid.
type sysProc struct{}

// startCmd starts cmd; only Linux needs a spawner thread (Pdeathsig).
func startCmd(cmd *exec.Cmd) (sysProc, error) { return sysProc{}, cmd.Start() }
