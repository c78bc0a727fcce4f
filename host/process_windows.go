//go:build windows

package host

// terminate is never called on Windows (osdep.Graceful is false): there
// is no SIGTERM to send, only the Shutdown RPC before the kill.
func (p *process) terminate() {}

// forceKill kills the plugin process (TerminateProcess).
func (p *process) forceKill() { p.cmd.Process.Kill() }

// killGroup does nothing on Windows: there are no process groups to
// signal, so processes a plugin started and did not stop outlive it.
func (p *process) killGroup() {}
