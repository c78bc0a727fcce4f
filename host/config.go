package host

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/hostwire"
)

// Options is what every entry point (Start, Reattach, Dial, Connect)
// reads: how the host talks to a plugin, wherever it runs. Versions is
// required; every other field has a useful zero value.
type Options struct {
	// Versions are the app protocol versions the host speaks; the plugin
	// picks the highest it shares.
	Versions []int
	// Security is how the connection is secured. The zero value means
	// AutoMTLS for Start and plain text for Reattach; Connect refuses it
	// (give it AutoMTLS(id) with the plugin's identity) and so does Dial
	// (give it TLS, or Plaintext on loopback); see Security.
	Security Security
	// Name labels the plugin in logs and errors; empty means the base
	// name of Command.Path for Start, "pid N" for Reattach, the endpoints
	// for Dial and "in-process plugin" for Connect.
	Name string
	// Logger receives the plugin's log records and plugkit's own
	// diagnostics; nil means slog.Default().
	Logger *slog.Logger
	// MaxMessageSize bounds gRPC messages both ways; 0 means
	// wire.DefaultMaxMessageSize.
	MaxMessageSize int
	// DialOptions are added to the gRPC connection's options.
	DialOptions []grpc.DialOption
	// Telemetry says where the host reports the plugin's traces, metrics
	// and lifecycle events; the zero value reports none, at no cost.
	Telemetry Telemetry
}

func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

// errNoVersions is what every entry point returns for an empty
// Options.Versions.
var errNoVersions = errors.New("host: Options.Versions is empty: list the app protocol versions this host speaks")

// check is the one check of Options that Start, Reattach, Dial and
// Connect share.
func (o *Options) check() error {
	if len(o.Versions) == 0 {
		return errNoVersions
	}
	return o.Security.check()
}

// Command says which plugin binary Start launches and how: what only
// Start reads. Path and Cookie are required; every other field has a
// useful zero value.
type Command struct {
	// Path is the plugin executable.
	Path string
	// Args are its arguments (not including the program name).
	Args []string
	// Env is added to the environment the plugin inherits, before the
	// handshake variables.
	Env []string
	// InheritEnv, when not nil, names the only variables of the host's
	// own environment the plugin inherits (besides Env and the handshake
	// variables, which it always gets). By default (nil) a plugin inherits
	// the host's whole environment, and with it every secret in it: cloud
	// credentials, tokens, database passwords. Name what the plugin needs
	// (PATH, HOME, TMPDIR, ...) to give it nothing else; an empty, non-nil
	// list passes nothing of the host's, except, when Options.Telemetry
	// has a TracerProvider, its OTEL_* variables and the trace context of
	// the start (TRACEPARENT), which Env overrides.
	InheritEnv []string
	// Dir is the plugin's working directory; empty means the host's.
	Dir string
	// Cookie is the magic cookie the plugin expects.
	Cookie handshake.Cookie
	// SHA256, when set, pins the binary: the hex SHA-256 it must have.
	// Start opens the file, hashes what it read from that open file, and
	// (on Linux) executes that same open file, so that swapping the binary
	// between the check and the exec cannot run unverified code. A binary
	// that does not match is refused with a *ChecksumError and never runs.
	SHA256 string
	// Runner launches the plugin and translates its addresses; nil runs
	// the binary on this machine as Start built its command. See the sandbox
	// package for one that isolates the plugin, and package wasmhost for
	// a GuestRunner, which runs a Path that is a WebAssembly module
	// inside this process.
	Runner Runner
	// Listen says where the plugin listens and where the host's brokered
	// servers make their sockets.
	Listen Listen
	// MultiplexBroker asks the plugin to carry brokered connections over
	// its one connection instead of a new socket each (go-plugin's
	// ClientConfig.GRPCBrokerMultiplex, PLUGIN_MULTIPLEX_GRPC): no socket
	// is made for a callback, and the plugin's own socket is closed once
	// the host is connected. The plugin must support it (plugkit plugins
	// and go-plugin >= v1.6.0 ones do); Start fails with
	// ErrMultiplexNotSupported otherwise.
	MultiplexBroker bool
	// Output says where the plugin's output goes besides its log records.
	Output Output
	// Timeouts bound the start and each step of the stop.
	Timeouts Timeouts
}

// Listen is where a launched plugin listens (Command.Listen), passed to
// it in the handshake variables.
type Listen struct {
	// Network is "tcp" to ask the plugin to listen on loopback TCP instead
	// of a unix socket (plugkit plugins honour it; others ignore it); empty
	// or "unix" means a unix socket. On Windows plugins listen on loopback
	// TCP whatever it says, as go-plugin's do there.
	Network string
	// UnixSocketDir is where the plugin and the host's brokered servers
	// make their sockets, in a private directory Start makes there; empty
	// means the temporary directory. Windows, where they listen on
	// loopback TCP, ignores it.
	UnixSocketDir string
	// UnixSocketGroup, when set, is the group (a name or numeric id) the
	// plugin's socket and its private directory are given to, group
	// readable and writable, so that a plugin run as another user of
	// that group (by a Runner, say) can serve and be reached; it is
	// passed to the plugin as PLUGIN_UNIX_SOCKET_GROUP (go-plugin's
	// UnixSocketConfig.Group). The host's brokered servers use it too.
	UnixSocketGroup string
	// MinPort and MaxPort bound a TCP listener; zero means 10000-25000.
	MinPort, MaxPort int
}

// Output is where a launched plugin's output goes (Command.Output), with
// go-plugin's names. Nil writers leave it to the plugin's log records.
type Output struct {
	// SyncStdout and SyncStderr receive what the plugin writes to
	// os.Stdout and os.Stderr after the handshake, sent over the
	// GRPCStdio stream (go-plugin's ClientConfig.SyncStdout and
	// SyncStderr). Nil means each line is logged; with all of Output nil,
	// a plugkit plugin keeps that output on its own pipes, which the host
	// reads and logs the same, and no stdio stream is opened
	// (wire.EnvStdioPipes).
	SyncStdout, SyncStderr io.Writer
	// Stderr, when set, receives every line the plugin writes to its
	// standard error file descriptor, as written (newline included),
	// besides the log record made of it (go-plugin's ClientConfig.Stderr).
	// A line longer than 64 KiB arrives in pieces. Writes happen on one
	// goroutine, in order; a slow writer slows the plugin's stderr.
	Stderr io.Writer
}

// Timeouts bound a launched plugin's start and stop (Command.Timeouts).
type Timeouts struct {
	// Start bounds the wait for the handshake; 0 means 30 seconds. The
	// context given to Start bounds it too.
	Start time.Duration
	// Stop bounds each of Close's two polite steps (Shutdown with the
	// wait for the exit after it, then SIGTERM with its wait) before the
	// next, firmer one; 0 means 2 seconds. Close of a plugin that ignores
	// both takes two of them, then SIGKILL; the first wait is skipped for
	// a plugin with no controller (Shutdown answers Unimplemented).
	Stop time.Duration
}

func (c *Command) check() error {
	if c.Path == "" {
		return errors.New("host: Command.Path is empty: name the plugin executable")
	}
	if err := c.Cookie.Validate(); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	if n := c.Listen.Network; n != "" && n != "unix" && n != "tcp" {
		return fmt.Errorf("host: Command.Listen.Network %q: want unix or tcp", n)
	}
	if c.SHA256 != "" {
		if b, err := hex.DecodeString(c.SHA256); err != nil || len(b) != sha256.Size {
			return fmt.Errorf("host: Command.SHA256 %q is not a hex SHA-256 (64 hex digits)", c.SHA256)
		}
	}
	return nil
}

// ConnectOptions is what Connect and Reattach read besides Options: they
// connect to a plugin this host did not launch. Its zero value is ready
// to use.
type ConnectOptions struct {
	// UnixSocketDir is where the host's brokered servers make their
	// sockets; empty means the temporary directory.
	UnixSocketDir string
	// UnixSocketGroup, when set, is the group (a name or numeric id) the
	// host's brokered sockets are given to, group readable and writable.
	UnixSocketGroup string
	// SyncStdout and SyncStderr receive what the plugin writes to
	// os.Stdout and os.Stderr, sent over the GRPCStdio stream. Nil means
	// each line is logged.
	SyncStdout, SyncStderr io.Writer
	// StopTimeout bounds the Shutdown RPC Close makes; 0 means 2
	// seconds.
	StopTimeout time.Duration
}

// ReattachOptions is what Reattach reads besides Options.
type ReattachOptions struct {
	// ConnectOptions is what Reattach shares with Connect.
	ConnectOptions
	// StopDebugPlugins makes Close ask a reattached plugin in debug mode
	// (handshake.Reattach.Test, as plugin.EnvDebug and Terraform's -debug
	// print it) to shut down. By default Close only disconnects from it
	// and leaves it running for the next host, as Terraform does.
	StopDebugPlugins bool
	// TrustTCPListener skips the check of a TCP reattach's listener. On
	// Linux the host checks, from /proc, that the process listening on
	// the address runs as this user and is the configuration's Pid (when
	// it names one); elsewhere, or for an address of another machine, it
	// cannot, and refuses a TCP reattach unless this is set. Set it only
	// for a configuration of a plugin you started yourself: whoever
	// listens on the address gets the host's calls.
	TrustTCPListener bool
}

// stopTimeout is the wait of each polite stop step.
func stopTimeout(d time.Duration) time.Duration { return cmp.Or(d, hostwire.DefaultStopTimeout) }

// commandName is the default name of a launched plugin.
func commandName(name, path string) string { return cmp.Or(name, filepath.Base(path)) }
