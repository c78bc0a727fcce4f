package host

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"

	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// A Runner decides how Start launches a plugin (go-plugin's RunnerFunc;
// a type of one's own with a Prepare method, see ExampleRunner).
// Start builds the plugin's command as always (path, arguments,
// environment with the handshake variables, working directory, and for a
// pinned binary the open file it executes), then hands it to the runner's
// Prepare in a Launch. The runner may change the command or replace it:
// run the plugin through a sandbox, a container runtime's CLI, ssh, or a
// trampoline of its own. It may also say how addresses translate between
// the plugin's view and the host's, for a plugin that sees its sockets
// under other paths than the host does.
//
// Start still runs the resulting command and owns the process: it gets
// its own process group, dies with the host (Pdeathsig, on Linux), has
// its stdout and stderr read by the host, and is stopped by Close. A
// runner that launches the plugin elsewhere does so through a command
// that stays in the foreground for the plugin's life and passes its
// stdout (the handshake line) and stderr through.
//
// A nil Command.Runner is no runner at all: Start runs the command as it
// built it, on this machine, and translates no address.
type Runner interface {
	// Prepare shapes one launch of a plugin. It is called once per Start,
	// before anything runs; an error stops the Start, and the plugin is
	// never started.
	Prepare(l *Launch) error
}

// Launch is one start of a plugin, as a Runner sees and shapes it.
type Launch struct {
	// Cmd is the command Start will run. Its Env holds the plugin's whole
	// environment, handshake variables included. For a pinned binary
	// (Command.SHA256), Path is /proc/self/fd/N and the open file is in
	// ExtraFiles: a runner that replaces Cmd keeps ExtraFiles as they are.
	// Start sets Stdout, Stderr and the process attributes it needs
	// (process group, death signal) after Prepare; on Linux it keeps
	// whatever else the runner put in SysProcAttr (namespaces).
	Cmd *exec.Cmd
	// Unnamed is how many of Cmd.Env's first entries are the host's own
	// variables passed without being named: its whole environment, which
	// Start passes when Command.InheritEnv is nil (0 when it names the
	// variables). The entries after them are the plugin's own or named:
	// the variables Command.InheritEnv names, Command.Env, the trace
	// context and the handshake variables. A runner that starts the
	// plugin from a clean environment (sandbox.Runner) drops the unnamed
	// ones it does not name itself.
	Unnamed int
	// SocketDir is the plugin's private directory on the host's side:
	// PLUGIN_UNIX_SOCKET_DIR, where the plugin makes its socket and the
	// host's brokered servers make theirs. A runner that isolates the
	// plugin's file system must let it see and write this directory (at
	// the same path, or at another one it sets in Cmd.Env and translates).
	SocketDir string
	// SocketGroup is the group (a name or numeric id) Start gives
	// SocketDir and the sockets of the host's brokered servers to,
	// group-accessible, as it does for Command.Listen.UnixSocketGroup, from which
	// it starts. A runner that runs the plugin as another user sets it to
	// that user's group, so that the plugin can make its socket in
	// SocketDir and dial the host's, and sets PLUGIN_UNIX_SOCKET_GROUP in
	// Cmd.Env to the same (the plugin gives its own sockets to it).
	SocketGroup string
	// HostSocketDir, when set, returns where the host reaches SocketDir
	// once the plugin's process runs, for a runner that gives the plugin
	// a directory of its own at SocketDir's path (a bounded tmpfs in its
	// mount namespace, reached through /proc/PID/root): the host's
	// brokered servers make their sockets there, and PluginToHost and
	// HostToPlugin translate between the two. Nil: SocketDir itself.
	HostSocketDir func() string
	// PluginToHost translates the addresses the plugin announces (its
	// handshake line and its brokered services) into addresses the host
	// can dial: a network ("unix" or "tcp") and a socket path or
	// host:port, as the plugin sees them, into the same as the host sees
	// them. An error refuses the address, with a message saying what to
	// do. Nil leaves them unchanged.
	PluginToHost func(network, address string) (string, string, error)
	// HostToPlugin translates the addresses of the host's brokered
	// services into addresses the plugin can dial, before the host
	// announces them, as PluginToHost does the other way. Nil leaves them
	// unchanged.
	HostToPlugin func(network, address string) (string, string, error)
	// Exited, when set, is called once the plugin's process has exited
	// (or failed to start after Prepare, with a nil state), before the
	// host reports it. The error it returns, if any, becomes the Cause of
	// the ExitError the host reports: a runner
	// that bounds the plugin's memory says there that the bound killed
	// it. It also releases what Prepare set up for this launch.
	Exited func(state *os.ProcessState) error
	// Stderr, when set, gets a copy of everything the plugin writes to
	// its standard error, as the host reads it, besides the host's own
	// logging of it; its errors are ignored. The host calls Exited only
	// once the plugin's stderr has ended (or after a short drain bound),
	// so that Exited can judge the exit by the plugin's last words: a
	// runner that bounds memory with an rlimit recognises the runtime's
	// out-of-memory message there.
	Stderr io.Writer
}

// prepare runs the Command's runner, if any, on cmd.
func (c *Command) prepare(cmd *exec.Cmd, socketDir string, unnamed int) (*Launch, error) {
	l := &Launch{Cmd: cmd, Unnamed: unnamed, SocketDir: socketDir, SocketGroup: c.Listen.UnixSocketGroup}
	if c.Runner == nil {
		return l, nil
	}
	if err := c.Runner.Prepare(l); err != nil {
		return nil, fmt.Errorf("preparing the launch (Command.Runner): %w", err)
	}
	if l.Cmd == nil {
		return nil, fmt.Errorf("preparing the launch (Command.Runner): the runner left Launch.Cmd nil: set the command to run")
	}
	return l, nil
}

// release calls Exited for a launch whose process never started.
func (l *Launch) release() {
	if l.Exited != nil {
		l.Exited(nil)
	}
}

// pluginToHost translates the plugin's handshake address.
func (l *Launch) pluginToHost(network, address string) (string, string, error) {
	if l == nil || l.PluginToHost == nil {
		return network, address, nil
	}
	n, a, err := l.PluginToHost(network, address)
	if err != nil {
		return "", "", fmt.Errorf("translating the plugin's address %s %s for the host (Launch.PluginToHost): %w", network, address, err)
	}
	return n, a, nil
}

// brokerStream returns s with the broker's announcements translated both
// ways, or s itself when there is nothing to translate.
func (l *Launch) brokerStream(s brokerwire.Stream, logger *slog.Logger) brokerwire.Stream {
	if l == nil || (l.PluginToHost == nil && l.HostToPlugin == nil) {
		return s
	}
	return &translatedStream{Stream: s, launch: l, warn: logger.Warn}
}

// translatedStream translates the addresses in broker announcements:
// those received from the plugin with PluginToHost, those sent to it with
// HostToPlugin.
type translatedStream struct {
	brokerwire.Stream
	launch *Launch
	warn   func(msg string, args ...any)
}

func (s *translatedStream) Send(info *pluginpb.ConnInfo) error {
	if f := s.launch.HostToPlugin; f != nil && info.GetAddress() != "" {
		n, a, err := f(info.GetNetwork(), info.GetAddress())
		if err != nil {
			return fmt.Errorf("translating the host's address %s %s for the plugin (Launch.HostToPlugin): %w", info.GetNetwork(), info.GetAddress(), err)
		}
		info = &pluginpb.ConnInfo{ServiceId: info.GetServiceId(), Network: n, Address: a, Knock: info.GetKnock()}
	}
	return s.Stream.Send(info)
}

func (s *translatedStream) Recv() (*pluginpb.ConnInfo, error) {
	for {
		info, err := s.Stream.Recv()
		if err != nil {
			return nil, err
		}
		f := s.launch.PluginToHost
		if f == nil || info.GetAddress() == "" {
			return info, nil
		}
		n, a, err := f(info.GetNetwork(), info.GetAddress())
		if err != nil {
			// Dropped: the host's Dial of this service then fails by
			// its deadline, and this record says why.
			s.warn("dropped a brokered service the host cannot reach: its address does not translate (Launch.PluginToHost)",
				"service", info.GetServiceId(), "network", info.GetNetwork(), "address", info.GetAddress(), "error", err)
			continue
		}
		return &pluginpb.ConnInfo{ServiceId: info.GetServiceId(), Network: n, Address: a, Knock: info.GetKnock()}, nil
	}
}
