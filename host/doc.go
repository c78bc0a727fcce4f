// Package host is the host side of plugkit: Start launches a plugin binary
// (one built with plugkit, go-plugin, terraform-plugin-go or anything else
// that speaks go-plugin's gRPC protocol), reads its handshake, connects over
// gRPC with AutoMTLS, checks its health, and returns a Client whose Conn is
// ready for generated gRPC stubs. Reattach connects to a plugin that is
// already running, Dial to a plugin that runs as a network service and
// Connect to one serving in-process.
//
// Start also runs a plugin built for WebAssembly (GOOS=wasip1) inside the
// host's process, when Command.Runner is a GuestRunner (package wasmhost):
// the same handshake and Client, isolated by the runtime. See
// docs/wasm.md.
//
// Each entry point takes what it reads: Options holds what all four share
// (versions, Security, name, logger, message size, dial options), Command
// what only Start reads (the binary, its environment, where it listens,
// its output and timeouts), Remote what Dial reads, ConnectOptions what
// Reattach and Connect read, and ReattachOptions Reattach's own.
//
// The plugin's standard error becomes log/slog records (hclog JSON and
// "[LEVEL] ..." lines are understood; any other bytes are logged, never
// trusted), one a line, each carrying the plugin's name and dated by the
// host's clock. The plugin's text has its control and bidi characters
// escaped (\x1b, \n, \u202e), and its hclog fields go in the group
// "fields", so that none takes a key of the host's. What the plugin
// prints to os.Stdout and os.Stderr after the handshake arrives over the
// GRPCStdio stream, in messages of at most 64 KiB (a larger one ends the
// stream, with a WARN record), and is logged the same way, or copied to
// Output.SyncStdout and Output.SyncStderr.
//
// Close stops the plugin politely and then firmly: the Shutdown RPC, a
// wait, SIGTERM, a wait, SIGKILL. A plugin without go-plugin's
// GRPCController (Shutdown answers Unimplemented) is not waited for: it
// gets SIGTERM at once. Close always reaps the process and leaves no
// goroutine behind.
//
// Each plugin runs in a process group of its own; the signals go to the
// group, and once the plugin has exited whatever is left of its group is
// killed, so the children a plugin starts do not outlive it. A process
// that leaves the group on purpose (setsid, a daemon) is out of reach:
// plugkit does not take the host's whole process tree over (a child
// subreaper would make the host wait for processes os/exec does not
// know); run such plugins in a container or cgroup of their own.
//
// On Windows plugins listen on loopback TCP, as go-plugin's do there, and
// there are no signals: Close makes the Shutdown RPC, waits, then kills
// the process (TerminateProcess), and a plugkit plugin watches its host's
// process handle to exit when the host dies. In place of a process group,
// each plugin runs in a job object of its own, which the processes it
// starts join too: killing the plugin kills the job, what is left of the
// job is killed once the plugin has exited, and the job kills them all
// when the host exits or dies (its last handle closes). The plugin is
// created suspended and joins the job before it runs. Where the system
// refuses the job (a Windows older than 8 whose host already runs in a
// job), the plugin runs without, and its children may outlive it.
//
// A plugin started with AutoMTLS off on TCP is open to every local user;
// Start logs a warning when that happens.
//
// Options.Telemetry reports the plugin on OpenTelemetry: spans of every
// call with W3C trace context crossing into the plugin and back through
// its brokered callbacks, metrics per plugin, and lifecycle events (Event:
// started, ready, exited, crashed with a *PanicError, refused by a pin),
// each also a log record. Its zero value installs nothing. See
// docs/observability.md.
package host
