package manager

import (
	"cmp"
	"log/slog"
	"time"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/host"
)

// Defaults for Config's zero values.
const (
	DefaultMaxRestarts    = 5
	DefaultRestartBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Second
	// DefaultHungCheck bounds the health check that tells a hung plugin
	// from a slow call (RestartPolicy.HungCheck), after a call timed out;
	// not to be confused with host's health check after connect
	// (5 seconds).
	DefaultHungCheck = time.Second
	// DefaultCallDeadline bounds a call through a Conn whose context
	// carries no deadline, where Config.Calls sets none.
	DefaultCallDeadline = time.Minute
	// DefaultUpgradeDrain is how long an upgraded plugin's old process
	// may take to finish its calls in flight (UpgradePolicy.Drain).
	DefaultUpgradeDrain = 30 * time.Second
	// DefaultProbation is how long a new plugin process is watched after
	// an upgrade, the old one kept to roll back to
	// (UpgradePolicy.Probation).
	DefaultProbation = 10 * time.Second
	// DefaultProbationFailures is how many failed calls, with none that
	// succeeded, make a new process one that answers only errors
	// (UpgradePolicy.Failures).
	DefaultProbationFailures = 3
	// stableAfter is how long a process must live for its restart count
	// to start again from zero.
	stableAfter = 30 * time.Second
)

// Config configures a Manager, the running side; how plugins are found,
// launched, described and cached is its Sources' (see Finder). Sources
// is required.
type Config struct {
	// Sources are where plugins are found (a Finder's Dirs, Files,
	// Remotes, RemotesFile, or a Source of your own), asked in order by
	// Discover: when two plugins implement the same (kind, name), the one
	// of the earlier source wins (a Source orders its own plugins).
	Sources []Source
	// Logger receives the manager's own records (restarts, hung
	// plugins); nil means slog.Default().
	Logger *slog.Logger
	// Telemetry is where the manager's spans (Discover, Dispense,
	// restarts), events and call metrics go (see host.Telemetry).
	Telemetry host.Telemetry
	// Releases, when set, lets incompatibility errors name the plugin
	// release to pick (see package compat).
	Releases *compat.Index
	// Restart is how crashed and hung plugin processes are restarted.
	Restart RestartPolicy
	// Calls bounds the calls made through a Conn whose context carries
	// no deadline, so that a hung plugin cannot hold a caller forever.
	Calls CallPolicy
	// Upgrade is how Manager.Upgrade and Manager.Refresh move a running
	// plugin to a new release.
	Upgrade UpgradePolicy
	// Watch is how Manager.Watch refreshes the plugins when a source
	// changes.
	Watch WatchPolicy
}

// UpgradePolicy says how a running plugin moves to a new release (see
// Manager.Upgrade). The zero value is the defaults.
type UpgradePolicy struct {
	// Drain is how long the old process may take to finish its calls and
	// streams in flight once new calls go to the new one; those still
	// running then end with codes.Unavailable, saying the plugin was
	// upgraded. 0 means DefaultUpgradeDrain.
	Drain time.Duration
	// Probation is how long the new process is watched after the switch,
	// the old one kept (serving no new call) to roll back to: a crash
	// (or a call its process failed without answering: its connection
	// broke), two failed health checks in a row (one every fifth of the
	// probation, kept between 100 ms and 1 s apart, each bounded by
	// Restart.HungCheck), or only errors (Failures) within it rolls the
	// upgrade back. 0 means DefaultProbation; a negative duration means
	// none (the old process is closed once drained).
	Probation time.Duration
	// Failures is how many calls on the new process must fail, with none
	// succeeding, for the new process to count as answering only errors.
	// A call fails when the plugin never answered it (its connection
	// broke) or answered Internal, Unknown, Unavailable, DataLoss or
	// Unimplemented; any other answer, an application error such as
	// NotFound included, is a success. 0 means DefaultProbationFailures.
	Failures int
}

// CallPolicy gives a deadline to the calls, unary or streaming, whose
// context has none; a call that brings its own deadline keeps it. The
// zero value gives every such call DefaultCallDeadline.
type CallPolicy struct {
	// Deadline is how long a call may take, from the moment it is made
	// (a stream: its whole life); 0 means DefaultCallDeadline, a
	// negative duration means no deadline.
	Deadline time.Duration
	// Kinds overrides Deadline for the plugins of a kind (the kind a Conn
	// was dispensed for): a positive duration is that kind's deadline, a
	// negative one means none (a kind whose streams live long), and 0 or
	// no entry means Deadline.
	Kinds map[string]time.Duration
}

// deadline is the deadline of a call to a plugin of kind that brings
// none; 0 means none.
func (p CallPolicy) deadline(kind string) time.Duration {
	d := p.Kinds[kind]
	if d == 0 {
		d = p.Deadline
	}
	switch {
	case d == 0:
		return DefaultCallDeadline
	case d < 0:
		return 0
	}
	return d
}

// RestartPolicy says how the Manager restarts a plugin process that
// crashed or hangs. The zero value is the defaults.
type RestartPolicy struct {
	// Max is how many restarts in a row a crashing plugin gets before
	// calls fail for good; 0 means DefaultMaxRestarts.
	Max int
	// Backoff is the wait before the first restart, doubled for each
	// further one up to DefaultMaxBackoff; 0 means DefaultRestartBackoff.
	Backoff time.Duration
	// HungCheck bounds the health check that tells a hung plugin from a
	// slow call, after a call timed out: a plugin that does not answer
	// in time is killed, and the next call restarts it; 0 means
	// DefaultHungCheck.
	HungCheck time.Duration
}

func (c *Config) logger() *slog.Logger { return cmp.Or(c.Logger, slog.Default()) }
