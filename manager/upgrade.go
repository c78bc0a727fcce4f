package manager

import (
	"context"
	"errors"
	"time"
)

// Outcome says how an upgrade of a plugin ended.
type Outcome string

// The outcomes of Manager.Upgrade and Manager.Refresh.
const (
	// UpgradeUnchanged: the sources hold the same plugin as the one
	// serving (same path and SHA-256, or the same endpoints); nothing
	// was started.
	UpgradeUnchanged Outcome = "unchanged"
	// UpgradeIdle: no process of the plugin was running; the registry
	// now names the new plugin, which the next Dispense starts.
	UpgradeIdle Outcome = "idle"
	// UpgradeRefused: the new plugin failed a check before any call
	// moved (its pin, its Describe answer, a major the host uses, its
	// start, its health); the old process keeps serving.
	UpgradeRefused Outcome = "refused"
	// UpgradeCompleted: calls moved to the new process, which lived
	// through its probation; the old process drained and was closed.
	UpgradeCompleted Outcome = "completed"
	// UpgradeRolledBack: calls moved to the new process, which failed
	// within its probation (Cause says how); calls went back to the old
	// process, which serves on, and the new one was closed.
	UpgradeRolledBack Outcome = "rolled back"
	// UpgradeSkipped: Refresh did not try the plugin again, as it was
	// rolled back before and has not changed since (Manager.Upgrade
	// tries it again when asked).
	UpgradeSkipped Outcome = "skipped"
)

// Release is one plugin process's release, as Status and UpgradeResult
// name it.
type Release struct {
	// Version is the plugin's release version (its Describe answer).
	Version string
	// Path is where it is: a binary's path, or a plugin service's
	// endpoints (Location.String()).
	Path   string
	Origin Origin
	// SHA256 is a binary's checksum, when known.
	SHA256 string
	// Pid is its process, 0 when none runs (or a plugin service).
	Pid int
}

// UpgradeResult says what an upgrade of one plugin process did.
type UpgradeResult struct {
	// Kind and Name are the implementation asked for (Upgrade), or the
	// first one dispensed from the process (Refresh).
	Kind, Name string
	// Names are every (kind, name) the process serves that moved with
	// it, as "kind/name": an upgrade moves the whole process.
	Names []string
	// From is the release that served before, To the new one.
	From, To Release
	Outcome  Outcome
	// Cause says why an upgrade was refused, rolled back or skipped.
	Cause error
	// Took is the time from the start of the upgrade to its outcome
	// (for a completed upgrade: to the old process's close).
	Took time.Duration
}

// PluginStatus is what serves one (kind, name) that has been dispensed,
// and what drains (see Manager.Status).
type PluginStatus struct {
	Kind, Name string
	// Serving is the release new calls go to.
	Serving Release
	// Draining are older releases still running: finishing their calls
	// in flight (within UpgradePolicy.Drain), or kept to roll back to
	// until the probation of Serving ends.
	Draining []Release
	// Probation, when not zero, is when the probation of Serving ends.
	Probation time.Time
}

// errNotYet marks the API of Upgrade before its implementation.
var errNotYet = errors.New("manager: Upgrade is not implemented yet")

// Upgrade runs the sources' Find again (as Discover does) and, when the
// plugin that implements (kind, name) changed (a new path, the same path
// with a new SHA-256, a plugin service's new endpoints), moves the
// process that serves it to the new plugin: checked before any call
// moves (its pin, its Describe answer, every major dispensed from the
// old process), started, re-initialised by every Conn's OnRestart hooks
// and health checked; then new calls and streams go to it while the old
// process finishes its calls in flight (Config.Upgrade.Drain); a new
// process that crashes, fails its health check or answers only errors
// within Config.Upgrade.Probation is rolled back. Every (kind, name) the
// process serves moves with it. Upgrade returns at the outcome; its
// error is the result's Cause for an upgrade refused or rolled back, and
// says so for one that could not be tried (Discover failed, the Manager
// is closed). ctx bounds the checks and the start; once calls moved, the
// probation and the drain run to their ends (both bounded by
// Config.Upgrade).
func (m *Manager) Upgrade(ctx context.Context, kind, name string) (UpgradeResult, error) {
	return UpgradeResult{Kind: kind, Name: name}, errNotYet
}

// Refresh runs the sources' Find again (as Discover does) and upgrades,
// as Upgrade does, every running process whose plugin changed, one
// result per process, in parallel; a plugin rolled back before is not
// tried again until it changes again (UpgradeSkipped). A refresh that
// finds nothing changed starts nothing and returns no result. Its error
// is Discover's.
func (m *Manager) Refresh(ctx context.Context) ([]UpgradeResult, error) {
	return nil, errNotYet
}

// Status lists, per (kind, name) that has been dispensed, the release
// that serves it and those that drain, ordered by kind and name.
func (m *Manager) Status() []PluginStatus {
	return nil
}
