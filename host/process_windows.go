//go:build windows

package host

// terminate is never called on Windows (osdep.Graceful is false): there
// is no SIGTERM to send, only the Shutdown RPC before the kill.
func (p *process) terminate() {}

// forceKill kills the plugin and whatever it started (TerminateJobObject),
// or the plugin alone (TerminateProcess) when it has no job.
func (p *process) forceKill() {
	if !p.sys.job.terminate() {
		p.cmd.Process.Kill()
	}
}

// killGroup ends what is left of the plugin's job after the plugin
// itself exited (children it started and did not stop), and closes the
// job's handle.
func (p *process) killGroup() { p.sys.job.close() }
