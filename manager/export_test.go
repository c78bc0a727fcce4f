package manager

// SetExitWaitHook makes f called whenever a failed call waits for its
// plugin's process to exit; restore undoes it.
func SetExitWaitHook(f func()) (restore func()) {
	exitWaitHook = f
	return func() { exitWaitHook = nil }
}
