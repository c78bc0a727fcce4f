package manager

import "github.com/plugkit/plugkit/host"

// The lifecycle events the manager reports besides the host's own, as
// host.Event values of these types: to Config.Host.Telemetry's OnEvent,
// as log records and as metrics. Their numbers are the ones package host
// names ("restarted", "hung", "gave up").
const (
	// EventRestarted: the manager started a new process after the last
	// one exited or hung (Event.Restarts in a row).
	EventRestarted host.EventType = 5
	// EventHung: the plugin did not answer a health check after a call
	// timed out and is killed.
	EventHung host.EventType = 6
	// EventGaveUp: the manager stopped restarting a plugin that crashed
	// Event.Restarts times in a row (Config.Restart.Max).
	EventGaveUp host.EventType = 7
)
