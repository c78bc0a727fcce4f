//go:build wasip1

package host

import (
	"errors"
	"os/exec"
)

// This file lets the host package compile into a WebAssembly (wasip1)
// plugin, which imports it through generated kind packages: a guest
// starts no processes, so what needs them fails or does nothing.

// errNoProcesses reports a process start inside a WebAssembly guest.
var errNoProcesses = errors.New("a WebAssembly (wasip1) guest cannot start plugin processes")

func setProcAttr(*exec.Cmd) {}

// sysProc is what a system adds to a plugin process: nothing here.
type sysProc struct{}

func startCmd(*exec.Cmd) (sysProc, error) { return sysProc{}, errNoProcesses }

func alive(int) bool { return false }

func (p *process) terminate() {}

func (p *process) forceKill() {}

func (p *process) killGroup() {}
