//go:build windows

package host

import "os/exec"

// setProcAttr leaves the command as it is: Windows has no process groups
// to signal and no parent-death signal. The plugin watches its parent's
// process handle itself, and Close kills it after the Shutdown RPC.
func setProcAttr(*exec.Cmd) {}

// startCmd starts cmd; only Linux needs a spawner thread (Pdeathsig).
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
