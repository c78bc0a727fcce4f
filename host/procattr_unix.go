//go:build !linux && !windows

package host

import (
	"os/exec"
	"syscall"
)

func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// startCmd starts cmd; only Linux needs a spawner thread (Pdeathsig).
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
