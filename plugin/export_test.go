package plugin

// Exiting returns h for a plugin whose process exits as soon as Run
// returns, as Serve's does: TestShutdownIdle's "idle, exiting" case.
func Exiting(h Harness) Harness {
	h.exits = true
	return h
}
