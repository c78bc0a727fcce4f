package manager

// SetExitWaitHook makes f called whenever a failed call of m waits for
// its plugin's process to exit. Call it before m's first call.
func SetExitWaitHook(m *Manager, f func()) { m.hooks.exitWait = f }

// SetLaunchHook makes f called with the path of each binary a Describe
// of finder is about to launch, after it was hashed (the attacker who
// swaps it then). Call it before the Describe.
func SetLaunchHook(finder *Finder, f func(path string)) { finder.launched = f }
