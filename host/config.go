package host

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/handshake"
)

// Defaults for Config's zero values.
const (
	// DefaultStartTimeout bounds the wait for the handshake line.
	DefaultStartTimeout = 30 * time.Second
	// DefaultStopTimeout is how long each of Close's two polite steps may
	// take before the next, firmer one: the Shutdown RPC with the wait for
	// the exit after it, then SIGTERM with its wait. Close of a plugin
	// that ignores both thus takes two StopTimeouts, then SIGKILL. The
	// first wait is skipped when the plugin has no controller (Shutdown
	// answers Unimplemented): it would not exit by itself.
	DefaultStopTimeout = 2 * time.Second
	// DefaultHealthTimeout bounds the health check made after connecting.
	DefaultHealthTimeout = 5 * time.Second
)

// Config says which plugin to launch and how to talk to it. Path, Cookie
// and Versions are required; every other field has a useful zero value.
type Config struct {
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
	// list passes nothing of the host's.
	InheritEnv []string
	// Dir is the plugin's working directory; empty means the host's.
	Dir string

	// Cookie is the magic cookie the plugin expects.
	Cookie handshake.Cookie
	// Versions are the app protocol versions the host speaks; the plugin
	// picks the highest it shares.
	Versions []int

	// NoAutoMTLS turns AutoMTLS off. It is on by default: the host and the
	// plugin each make a throwaway certificate and accept only each other.
	NoAutoMTLS bool
	// TLS, for teams with their own PKI, is the TLS configuration to
	// connect with instead of AutoMTLS (go-plugin's
	// ClientConfig.TLSConfig): the plugin serves its own certificate
	// (plugin.Config.TLSProvider) and the host asks for no AutoMTLS.
	// Set RootCAs to the plugin's CA, Certificates to the host's own
	// certificate if the plugin requires one, and ServerName to a name in
	// the plugin's certificate. The broker uses it both ways, as
	// go-plugin's does. Setting it replaces AutoMTLS; setting it together
	// with NoAutoMTLS false is therefore fine, and nil keeps AutoMTLS.
	TLS *tls.Config
	// Network is "tcp" to ask the plugin to listen on loopback TCP instead
	// of a unix socket (plugkit plugins honour it; others ignore it). On
	// Windows plugins listen on loopback TCP whatever it says, as
	// go-plugin's do there.
	Network string
	// SHA256, when set, pins the binary: the hex SHA-256 it must have.
	// Start opens the file, hashes what it read from that open file, and
	// (on Linux) executes that same open file, so that swapping the binary
	// between the check and the exec cannot run unverified code. A binary
	// that does not match is refused with a *ChecksumError and never runs.
	SHA256 string
	// UnixSocketDir is where the plugin and the host's brokered servers
	// make their sockets; empty means the temporary directory. Windows,
	// where they listen on loopback TCP, ignores it.
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
	// MultiplexBroker asks the plugin to carry brokered connections over
	// its one connection instead of a new socket each (go-plugin's
	// ClientConfig.GRPCBrokerMultiplex, PLUGIN_MULTIPLEX_GRPC): no socket
	// is made for a callback, and the plugin's own socket is closed once
	// the host is connected. The plugin must support it (plugkit plugins
	// and go-plugin >= v1.6.0 ones do); Start fails with
	// ErrMultiplexNotSupported otherwise. Reattach refuses it, as
	// go-plugin does.
	MultiplexBroker bool

	// Name labels the plugin in logs and errors; empty means the base
	// name of Path.
	Name string
	// Logger receives the plugin's log records and plugkit's own
	// diagnostics; nil means slog.Default().
	Logger *slog.Logger
	// Stdout and Stderr receive what the plugin writes to os.Stdout and
	// os.Stderr after the handshake (sent over GRPCStdio). Nil means each
	// line is logged.
	Stdout, Stderr io.Writer
	// StderrCopy, when set, receives every line the plugin writes to its
	// standard error file descriptor, as written (newline included),
	// besides the log record made of it (go-plugin's ClientConfig.Stderr).
	// A line longer than 64 KiB arrives in pieces. Writes happen on one
	// goroutine, in order; a slow writer slows the plugin's stderr.
	StderrCopy io.Writer

	// StartTimeout bounds the wait for the handshake; 0 means
	// DefaultStartTimeout. The context given to Start bounds it too.
	StartTimeout time.Duration
	// StopTimeout bounds each of Close's two polite steps (Shutdown,
	// SIGTERM); 0 means DefaultStopTimeout.
	StopTimeout time.Duration
	// MaxMessageSize bounds gRPC messages both ways; 0 means
	// wire.DefaultMaxMessageSize.
	MaxMessageSize int
	// DialOptions are added to the gRPC connection's options.
	DialOptions []grpc.DialOption

	// Runner launches the plugin and translates its addresses; nil means
	// Exec, which runs the binary on this machine. See the sandbox
	// package for one that isolates the plugin.
	Runner Runner

	// StopDebugPlugins makes Close ask a reattached plugin in debug mode
	// (ReattachConfig.Test, as plugin.EnvDebug and Terraform's -debug
	// print it) to shut down. By default Close only disconnects from it
	// and leaves it running for the next host, as Terraform does.
	StopDebugPlugins bool
}

func (c *Config) check() error {
	if c.Path == "" {
		return errors.New("host: Config.Path is empty: name the plugin executable")
	}
	if err := c.Cookie.Validate(); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	if err := checkVersions(c.Versions); err != nil {
		return err
	}
	if c.Network != "" && c.Network != "unix" && c.Network != "tcp" {
		return fmt.Errorf("host: Config.Network %q: want unix or tcp", c.Network)
	}
	if c.SHA256 != "" {
		if b, err := hex.DecodeString(c.SHA256); err != nil || len(b) != sha256.Size {
			return fmt.Errorf("host: Config.SHA256 %q is not a hex SHA-256 (64 hex digits)", c.SHA256)
		}
	}
	return nil
}

func (c *Config) name() string {
	if c.Name != "" {
		return c.Name
	}
	return filepath.Base(c.Path)
}

// errNoVersions is what every entry point returns for an empty
// Config.Versions.
var errNoVersions = errors.New("host: Config.Versions is empty: list the app protocol versions this host speaks")

// checkVersions is the one check of Config.Versions that Start, Reattach,
// Dial and Connect share.
func checkVersions(versions []int) error {
	if len(versions) == 0 {
		return errNoVersions
	}
	return nil
}

func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}
