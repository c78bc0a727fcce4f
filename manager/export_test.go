package manager

// SetExitWaitHook makes f called whenever a failed call of m waits for
// its plugin's process to exit. Call it before m's first call.
func SetExitWaitHook(m *Manager, f func()) { m.hooks.exitWait = f }
