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
	// EventUpgradeStarted: Upgrade or Refresh is starting the new
	// release of a running plugin (Event.Binary; its version in
	// Attributes, the old one as plugkit.upgrade.from_version).
	EventUpgradeStarted host.EventType = 9
	// EventUpgradeSwitched: new calls go to the new process (Pid); the
	// old one drains and is kept until the probation ends.
	EventUpgradeSwitched host.EventType = 10
	// EventUpgradeCompleted: the new process lived through its
	// probation and the old one is closed.
	EventUpgradeCompleted host.EventType = 11
	// EventUpgradeRolledBack: the new process failed within its
	// probation (Cause); calls went back to the old one.
	EventUpgradeRolledBack host.EventType = 12
	// EventUpgradeRefused: the new release failed a check before any
	// call moved (Cause); the old process serves on.
	EventUpgradeRefused host.EventType = 13
)

// EventRestartRefused: the plugin's process exited (or had not started
// yet) and its file no longer has the SHA-256 its release was described
// with, so the manager did not start it (Cause names both checksums and
// what to do): a restart runs only the release the plugin serves as;
// Refresh, Upgrade or Watch take the new file through an upgrade's
// checks. Calls fail with the same error until then, or until the
// described file is back.
const EventRestartRefused host.EventType = 14
