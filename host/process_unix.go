//go:build !windows && !wasip1

package host

import "syscall"

// terminate asks the plugin's process group to stop (SIGTERM).
func (p *process) terminate() { p.signal(syscall.SIGTERM) }

// forceKill kills the plugin's process group (SIGKILL).
func (p *process) forceKill() { p.signal(syscall.SIGKILL) }

// signal sends sig to the plugin's process group: the plugin and whatever
// it started that stayed in its group (Start makes the plugin a group
// leader). A process that left the group (setsid, a daemon) is out of
// reach; see the package documentation.
func (p *process) signal(sig syscall.Signal) {
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		p.cmd.Process.Signal(sig)
	}
}

// killGroup ends what is left of the plugin's process group after the
// plugin itself exited: children it started and did not stop.
func (p *process) killGroup() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}
