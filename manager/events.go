package manager

import (
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/hostwire"
)

// The lifecycle events the manager reports besides the host's own, to
// Config.Host.Telemetry's OnEvent, as log records and as metrics, as
// host.Event values of these types.
const (
	// EventRestarted: the manager started a new process after the last
	// one exited or hung (Event.Restarts in a row).
	EventRestarted host.EventType = hostwire.EventRestarted
	// EventHung: the plugin did not answer a health check after a call
	// timed out and is killed.
	EventHung host.EventType = hostwire.EventHung
	// EventGaveUp: the manager stopped restarting a plugin that crashed
	// Event.Restarts times in a row (Config.Restart.Max).
	EventGaveUp host.EventType = hostwire.EventGaveUp
)
