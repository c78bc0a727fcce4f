package manager

import (
	"log/slog"
	"runtime"
	"time"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
)

// Defaults for Config's zero values.
const (
	DefaultMaxRestarts    = 5
	DefaultRestartBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Second
	// DefaultHungCheck bounds the health check that tells a hung plugin
	// from a slow call (RestartPolicy.HungCheck), after a call timed out;
	// not to be confused with host.DefaultHealthTimeout, the check after
	// connect.
	DefaultHungCheck       = time.Second
	DefaultDescribeTimeout = 15 * time.Second
	// stableAfter is how long a process must live for its restart count
	// to start again from zero.
	stableAfter = 30 * time.Second
)

// Config configures a Manager. Sources and Cookie are required.
type Config struct {
	// Sources are where plugins are found (Dirs, Files, Remotes,
	// RemotesFile, or a Source of your own), asked in order by Discover:
	// when two plugins implement the same (kind, name), the one of the
	// earlier source wins (a Source orders its own plugins).
	Sources []Source
	// Cookie is the magic cookie the plugins expect.
	Cookie handshake.Cookie
	// CacheFile keeps Describe answers between runs (JSON). Empty keeps
	// them for the Manager's life only. A cache file that is a symbolic
	// link, a FIFO, a device or larger than 16 MiB is not read: Discover
	// logs a warning naming it, describes every binary afresh, and saves
	// a regular file in its place (never through the link).
	CacheFile string
	// Pins maps a plugin binary (its path, or its base name) to the hex
	// SHA-256 it must have. A binary that does not match is refused before
	// it runs, at discovery and at every start.
	Pins map[string]string
	// Releases, when set, lets incompatibility errors name the plugin
	// release to pick (see package compat).
	Releases *compat.Index
	// NoAutoMTLS turns AutoMTLS off for every plugin.
	NoAutoMTLS bool
	// Runner launches every plugin binary, for Describe and for use (see
	// host.Config.Runner); nil means exec on this machine. A
	// sandbox.Runner isolates every plugin the manager starts.
	Runner host.Runner
	// InheritEnv, when not nil, names the only variables of the host's
	// environment the plugins inherit (see host.Config.InheritEnv). By
	// default they inherit all of it, every secret in it included.
	InheritEnv []string
	// MultiplexBroker asks every plugin to carry its brokered callbacks
	// over its one connection (see host.Config.MultiplexBroker).
	MultiplexBroker bool
	// Logger receives the plugins' logs and the manager's own; nil means
	// slog.Default().
	Logger *slog.Logger
	// Parallelism bounds how many binaries are described at once; 0 means
	// the number of CPUs.
	Parallelism int
	// DescribeTimeout bounds one binary's start and Describe.
	DescribeTimeout time.Duration
	// Restart is how crashed and hung plugin processes are restarted.
	Restart RestartPolicy
	// StopTimeout is passed to host.Config.StopTimeout.
	StopTimeout time.Duration
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

func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

func (c *Config) parallelism() int {
	if c.Parallelism > 0 {
		return c.Parallelism
	}
	return runtime.NumCPU()
}
