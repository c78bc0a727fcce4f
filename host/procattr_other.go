//go:build !linux

package host

import "os/exec"

func setProcAttr(cmd *exec.Cmd) {}
