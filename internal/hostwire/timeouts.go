package hostwire

import "time"

// Defaults for the zero values of host's Command, ConnectOptions and
// Remote; host's doc comments give their values in words.
const (
	// DefaultStartTimeout bounds the wait for the handshake line, and
	// host.Dial's wait for a healthy endpoint when its context has no
	// deadline.
	DefaultStartTimeout = 30 * time.Second
	// DefaultStopTimeout is how long each of Client.Close's two polite steps may
	// take before the next, firmer one: the Shutdown RPC with the wait for
	// the exit after it, then SIGTERM with its wait. Close of a plugin
	// that ignores both thus takes two StopTimeouts, then SIGKILL. The
	// first wait is skipped when the plugin has no controller (Shutdown
	// answers Unimplemented): it would not exit by itself.
	DefaultStopTimeout = 2 * time.Second
	// DefaultHealthCheckTimeout bounds one health check: the one made
	// right after connecting to a plugin, and each Client.Ping (within
	// its context).
	DefaultHealthCheckTimeout = 5 * time.Second
)
