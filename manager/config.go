package manager

import (
	"cmp"
	"log/slog"
	"runtime"
	"time"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/wasmhost"
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
	// stableAfter is how long a process must live for its restart count
	// to start again from zero.
	stableAfter = 30 * time.Second
)

// Config configures a Manager. Sources and Launch.Cookie are required.
type Config struct {
	// Sources are where plugins are found (Dirs, Files, Remotes,
	// RemotesFile, or a Source of your own), asked in order by Discover:
	// when two plugins implement the same (kind, name), the one of the
	// earlier source wins (a Source orders its own plugins).
	Sources []Source
	// Launch is the template of every plugin binary's launch, for
	// Describe and for use: Cookie (the magic cookie the plugins expect;
	// required), and as needed Runner (a sandbox.Runner isolates every
	// plugin), InheritEnv (by default plugins inherit the host's whole
	// environment, every secret in it included), Env, Args, Dir, Listen,
	// MultiplexBroker, Output and Timeouts. The manager sets Path and
	// SHA256 (from Pins) itself, for each binary.
	Launch host.Command
	// Host is the template of every plugin's host options: Security (for
	// binaries; a Remote says its own), Logger (which also receives the
	// manager's own records; nil means slog.Default()), MaxMessageSize
	// and DialOptions (a Remote's own are added to them). The manager
	// sets Versions and Name itself, for each plugin.
	Host host.Options
	// CacheFile keeps Describe answers between runs (JSON). Empty keeps
	// them for the Manager's life only. A cache file that is a symbolic
	// link, a FIFO, a device or larger than 16 MiB is not read: Discover
	// logs a warning naming it, describes every binary afresh, and saves
	// a regular file in its place (never through the link).
	CacheFile string
	// Wasm is what the WebAssembly (wasip1) plugins it finds (.wasm files,
	// recognised by their content) may use; they run inside this process
	// (package wasmhost). The zero value grants them nothing but
	// wasmhost.DefaultMemoryLimit of memory, and keeps their compiled form
	// beside CacheFile (CacheFile + ".wasm", a directory) unless
	// Wasm.CacheDir says where. Launch's Runner, Listen and
	// MultiplexBroker do not apply to them; InheritEnv names the host's
	// variables they get (none when nil).
	Wasm wasmhost.Config
	// Guests, when set, runs the WebAssembly plugins instead of a runtime
	// the manager makes from Wasm (which then does not apply): a runtime
	// for modules its caller owns, shares and closes, such as a
	// wasmhost.Runtime. One that compiles ahead (CompileFile) compiles a
	// module before its Describe, outside DescribeTimeout.
	Guests host.GuestRunner
	// Pins maps a plugin binary (its path, or its base name) to the hex
	// SHA-256 it must have. A binary that does not match is refused before
	// it runs, at discovery and at every start.
	Pins map[string]string
	// Releases, when set, lets incompatibility errors name the plugin
	// release to pick (see package compat).
	Releases *compat.Index
	// Parallelism bounds how many binaries are launched for Describe at
	// once (and hashed at once, at most one per CPU); 0 means twice the
	// number of CPUs: a launch spends part of its time waiting on the
	// plugin's process (its handshake, Describe, its exit), which another
	// launch fills.
	Parallelism int
	// DescribeTimeout bounds one binary's start and Describe; 0 means
	// describe.DefaultTimeout.
	DescribeTimeout time.Duration
	// Restart is how crashed and hung plugin processes are restarted.
	Restart RestartPolicy
	// KeepDescribed keeps each process Discover starts to describe a
	// plugin running for the plugin's first use, instead of stopping it,
	// so that a manager that uses every plugin it finds (a test, the
	// conformance matrix) starts each plugin once. A kept process that is
	// not used runs until the next Discover or Close. Without it, a
	// plugkit catalog plugin is described without serving (it writes its
	// description and exits: see handshake.EnvDescribe), which is
	// cheaper; with it, every plugin is started and described over gRPC.
	KeepDescribed bool
	// Calls bounds the calls made through a Conn whose context carries
	// no deadline, so that a hung plugin cannot hold a caller forever.
	Calls CallPolicy
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

func (c *Config) logger() *slog.Logger { return cmp.Or(c.Host.Logger, slog.Default()) }

func (c *Config) parallelism() int {
	if c.Parallelism > 0 {
		return c.Parallelism
	}
	return 2 * runtime.NumCPU()
}
