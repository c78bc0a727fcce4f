//go:build !linux

package host

import "os/exec"

func setProcAttr(cmd *exec.Cmd) {}

// startCmd starts cmd; only Linux needs a spawner thread (Pdeathsig).
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
