package host

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plugkit/plugkit/automtls"
	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/internal/guestcall"
	"github.com/plugkit/plugkit/internal/hostwire"
	"github.com/plugkit/plugkit/internal/listen"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/wire"
)

// ErrNotServing reports a plugin whose health check answered NOT_SERVING.
var ErrNotServing = errors.New("plugin reports NOT_SERVING on its health check")

// Client is a running plugin and the gRPC connection to it.
type Client struct {
	opts    Options
	name    string
	logger  *slog.Logger
	life    lifecycle
	line    handshake.Line
	conn    *grpc.ClientConn
	broker  *broker.Broker
	mux     brokerwire.Mux // the multiplexed connection (Command.MultiplexBroker); nil without
	started time.Time
	ready   time.Duration
	tls     bool // the connection uses TLS (AutoMTLS or the host's own)
	rep     *reporter

	multiplex   bool    // Command.MultiplexBroker
	launch      *Launch // how it was launched (Command.Runner); nil unless launched
	brokerDir   string  // where the host's brokered servers make their sockets
	brokerGroup string  // the group they are given to
	syncStdout  io.Writer
	syncStderr  io.Writer
	endpoints   []string                                        // the endpoints of a plugin service (Dial); nil otherwise
	rawDial     func(context.Context, string) (net.Conn, error) // a guest's one connection (guest.go); nil otherwise
	guestCalls  bool                                            // the guest takes calls without HTTP/2 (guestCallOptions)
	calls       *guestcall.Host                                 // its connection's unary calls, once connected; nil otherwise

	// stdioPipes: the host asked a launched plugin to leave its output on
	// its pipes (wire.EnvStdioPipes); pipesKept: the plugin said it does,
	// so no stdio stream is opened.
	stdioPipes, pipesKept bool
	// inflight counts a launched plugin's calls in flight (nil for other
	// plugins): Close tells a plugin with none that it may stop at once.
	inflight *callCount

	bg       sync.WaitGroup // stdio forwarding and the broker stream
	cancelBG context.CancelFunc

	closeOnce sync.Once
	closeErr  error

	describe  bool   // describeOrStart: the plugin is asked only for its description
	described []byte // the payload of its describe line, when it wrote one
}

// newClient is the Client every entry point starts from.
func newClient(opts Options, name string) *Client {
	logger := opts.logger().With("plugin", name)
	return &Client{opts: opts, name: name, logger: logger, started: time.Now(), rep: newReporter(opts.Telemetry, logger, name, "")}
}

// Start launches the plugin cmd names, waits for its handshake, connects
// and checks its health. ctx bounds the whole start; the plugin keeps
// running after Start returns, until Close. The zero opts.Security is
// AutoMTLS: the host and the plugin each make a throwaway certificate and
// accept only each other. host.TLS uses the host's own PKI (the plugin
// serves its own certificate and is asked for no AutoMTLS); host.Plaintext
// turns TLS off. A cmd.Path that is a WebAssembly module runs inside this
// process, through a cmd.Runner that is a GuestRunner (see GuestRunner).
func Start(ctx context.Context, cmd Command, opts Options) (*Client, error) {
	return startCommand(ctx, cmd, opts, false)
}

// startCommand is Start's and describeOrStart's work: it checks cmd and
// opts and starts the plugin within its span; describe asks the plugin
// only for its description (handshake.EnvDescribe).
func startCommand(ctx context.Context, cmd Command, opts Options, describe bool) (*Client, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := cmd.check(); err != nil {
		return nil, err
	}
	c := newClient(opts, commandName(opts.Name, cmd.Path))
	c.rep.binary = cmd.Path
	c.describe = describe
	ctx, span := opts.Telemetry.startSpan(ctx, c.name, cmd.Path)
	err := c.start(ctx, cmd)
	endSpan(span, err)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// start is Start's work, within its span.
func (c *Client) start(ctx context.Context, cmd Command) error {
	c.multiplex = cmd.MultiplexBroker
	c.syncStdout, c.syncStderr = cmd.Output.SyncStdout, cmd.Output.SyncStderr
	// A guest's transport is its own stdio pipes, where AutoMTLS does not
	// apply, so the key pair is made only for a process.
	if wasm, err := c.startWasm(ctx, cmd); wasm {
		return err
	}
	var id *automtls.Identity
	if c.opts.Security.mode == modeAutoMTLS {
		if id = c.opts.Security.id; id == nil {
			var err error
			if id, err = automtls.New(); err != nil {
				return err
			}
		}
	}
	if err := checkExecutable(cmd.Path); err != nil {
		return &StartError{Name: c.name, Err: err}
	}
	l, err := c.launchProcess(ctx, cmd, id)
	if err != nil {
		if ce := (*ChecksumError)(nil); errors.As(err, &ce) {
			c.rep.report(Event{Type: EventPinRefused, Cause: ce})
		}
		return &StartError{Name: c.name, Err: err}
	}
	text, err := l.proc.readHandshake(ctx, cmp.Or(cmd.Timeouts.Start, hostwire.DefaultStartTimeout), c.name)
	if err != nil {
		return l.fail(c.name, err)
	}
	if c.describe && handshake.IsDescribeLine(text) {
		return c.finishDescribed(ctx, l, text)
	}
	if err := c.connectLaunched(ctx, l, text, id); err != nil {
		return l.fail(c.name, err)
	}
	c.ready = time.Since(c.started)
	c.rep.report(Event{Type: EventReady, Pid: c.Pid(), Major: c.line.AppVersion, Duration: c.ready})
	l.proc.forwardStdout(c.logger)
	l.proc.whenExited(l.watchExit)
	return nil
}

// launchProcess makes the plugin's socket directory and starts its
// process, through cmd.Runner.
func (c *Client) launchProcess(ctx context.Context, cmd Command, id *automtls.Identity) (*launched, error) {
	sock, err := newSockDir(cmd.Listen.UnixSocketDir)
	if err != nil {
		return nil, err
	}
	x := exec.Command(cmd.Path, cmd.Args...)
	environ := os.Environ()
	env := launchEnv(cmd, c.opts.Versions, id, sock.path)
	env.Describe = c.describe
	// Without the host's own PLUGKIT_HOST_PID (it may be a plugin itself),
	// so that unnamed below counts what reaches the plugin.
	hostEnv := withHostPID(inherited(cmd, environ), false)
	x.Env = slices.Concat(hostEnv, c.opts.Telemetry.launchEnv(ctx, c.name, environ), cmd.Env, env.Environ())
	x.Dir = cmd.Dir
	if cmd.SHA256 != "" {
		f, err := openPinned(ctx, cmd.Path, cmd.SHA256)
		if err != nil {
			sock.remove()
			return nil, err
		}
		defer f.Close() // the child has its own copy once started
		osdep.ExecFile(x, f)
	}
	unnamed := 0
	if cmd.InheritEnv == nil {
		unnamed = len(hostEnv)
	}
	x.Env = withHostPID(x.Env, cmd.Runner == nil)
	noOutput := cmd.Output.SyncStdout == nil && cmd.Output.SyncStderr == nil && cmd.Output.Stderr == nil
	x.Env, c.stdioPipes = withStdioPipes(x.Env, noOutput)
	launch, err := cmd.prepare(x, sock.path, unnamed)
	if err != nil {
		sock.remove()
		return nil, err
	}
	if launch.SocketGroup != "" && sock.path != "" {
		if err := listen.ShareDir(sock.path, launch.SocketGroup); err != nil {
			sock.remove()
			setting := "Command.Listen.UnixSocketGroup"
			if launch.SocketGroup != cmd.Listen.UnixSocketGroup {
				setting = "Launch.SocketGroup (set by Command.Runner)"
			}
			launch.release()
			return nil, fmt.Errorf("%s: %w", setting, err)
		}
	}
	outR, outW := sock.stdout()
	proc, err := startProcess(launch.Cmd, c.logger, stderrCopy(cmd.Output.Stderr, launch.Stderr), launch.Stderr != nil, launch.Exited, [2]*os.File{outR, outW})
	if err != nil {
		sock.remove()
		launch.release()
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	c.launch = launch
	c.brokerDir, c.brokerGroup = sock.path, launch.SocketGroup
	if launch.HostSocketDir != nil && sock.path != "" {
		c.brokerDir = launch.HostSocketDir()
	}
	l := &launched{proc: proc, sock: sock, name: c.name, logger: c.logger, rep: c.rep, stopWait: stopTimeout(cmd.Timeouts.Stop)}
	c.life = l
	return l, nil
}

// withHostPID drops from env the host pid it inherited (the host may
// itself be a plugin), and, when the plugin runs directly as this
// process's child (direct: no Runner, whose wrapper or namespaces would
// stand between them), names this process in wire.EnvHostPID: a plugin
// that starts after its host died, re-parented, then knows it.
func withHostPID(env []string, direct bool) []string {
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, wire.EnvHostPID+"=") })
	if direct {
		env = append(env, wire.EnvHostPID+"="+strconv.Itoa(os.Getpid()))
	}
	return env
}

// withStdioPipes drops from env the wire.EnvStdioPipes it inherited (the
// host may itself be a plugin) and, when ask, sets it: the host then reads
// the plugin's output from its pipes alone. Only a Command without
// Output asks: a plugin that keeps its output on its pipes sends what it
// writes to os.Stdout and os.Stderr where it writes its logs, which the
// host logs the same, but neither Output.SyncStdout nor SyncStderr could
// tell it apart, and Output.Stderr would get it too.
func withStdioPipes(env []string, ask bool) ([]string, bool) {
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, wire.EnvStdioPipes+"=") })
	if ask {
		env = append(env, wire.EnvStdioPipes+"=1")
	}
	return env, ask
}

// launchEnv is what the handshake variables tell a launched plugin.
func launchEnv(cmd Command, versions []int, id *automtls.Identity, sockPath string) handshake.Env {
	env := handshake.Env{
		Cookie:          cmd.Cookie,
		Versions:        versions,
		MinPort:         cmd.Listen.MinPort,
		MaxPort:         cmd.Listen.MaxPort,
		UnixSocketDir:   sockPath,
		UnixSocketGroup: cmd.Listen.UnixSocketGroup,
		Network:         cmd.Listen.Network,
		Multiplex:       cmd.MultiplexBroker,
	}
	if id != nil {
		env.ClientCert = id.PEM()
	}
	return env
}

// connectLaunched checks what a launched plugin's handshake line (text)
// says and connects.
func (c *Client) connectLaunched(ctx context.Context, l *launched, text string, id *automtls.Identity) error {
	line, err := handshake.Parse(text)
	if err != nil {
		return err
	}
	if line.Network, line.Address, err = c.launch.pluginToHost(line.Network, line.Address); err != nil {
		return err
	}
	if !slices.Contains(c.opts.Versions, line.AppVersion) {
		return &handshake.VersionError{Plugin: []int{line.AppVersion}, Host: c.opts.Versions}
	}
	if c.multiplex && !(line.HasMultiplex && line.Multiplex) {
		return ErrMultiplexNotSupported
	}
	c.rep.report(Event{Type: EventStarted, Pid: l.pid(), Major: line.AppVersion})
	tlsConfig, err := clientTLS(id, c.opts.Security.ownTLS(), line)
	if err != nil {
		return err
	}
	if tlsConfig == nil && line.Network == "tcp" {
		c.logger.Warn("TLS is off and the plugin listens on TCP: any local user can connect to it and call it; keep AutoMTLS on, or use a unix socket", "address", line.Address)
	}
	c.line = line
	return c.connect(ctx, tlsConfig)
}

// fail ends a plugin that failed to start and returns err with the tail
// of its stderr.
func (l *launched) fail(name string, err error) error {
	l.proc.kill()
	l.sock.remove()
	tail := l.proc.stderr.lastLines()
	var exit *ExitError
	if errors.As(err, &exit) {
		exit.Stderr = tail
		return exit
	}
	return &StartError{Name: name, Err: err, Stderr: tail}
}

func clientTLS(id *automtls.Identity, own *tls.Config, line handshake.Line) (*tls.Config, error) {
	switch {
	case own != nil && line.ServerCert != nil:
		return nil, errors.New("the plugin answered with an AutoMTLS certificate, but the host was given its own TLS (host.TLS) and did not ask for AutoMTLS: leave Options.Security zero to use AutoMTLS")
	case own != nil:
		return own, nil
	case id == nil && line.ServerCert != nil:
		return nil, errors.New("the plugin sent a TLS certificate, but AutoMTLS is off on the host: leave Options.Security zero (AutoMTLS)")
	case id == nil:
		return nil, nil
	case line.ServerCert == nil:
		return nil, errors.New("the plugin answered without a certificate: it does not support AutoMTLS (or ignored PLUGIN_CLIENT_CERT), or it serves its own TLS (then give the host its PKI with host.TLS); set Options.Security to host.Plaintext() (--no-mtls) if plain text is intended")
	}
	cert, err := automtls.ParseDER(line.ServerCert)
	if err != nil {
		return nil, err
	}
	return id.Config(cert), nil
}

// connect dials the plugin, checks its health and opens the broker and
// stdio streams.
func (c *Client) connect(ctx context.Context, tlsConfig *tls.Config) error {
	maxMsg := cmp.Or(c.opts.MaxMessageSize, wire.DefaultMaxMessageSize)
	creds := insecure.NewCredentials()
	if tlsConfig != nil {
		creds = credentials.NewTLS(tlsConfig)
	}
	network, address := c.line.Network, c.line.Address
	dial, err := c.dialer(ctx, network, address)
	if err != nil {
		return err
	}
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(dial),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)),
	}, slices.Concat(guestDialOptions(c.rawDial != nil), c.opts.Telemetry.dialOptions(c.name, c.rep.binary), c.opts.DialOptions, c.guestCallOptions())...)
	if _, ok := c.life.(*launched); ok {
		c.inflight = &callCount{}
		opts = append(opts, c.inflight.dialOptions()...)
	}
	conn, err := grpc.NewClient("passthrough:///"+address, opts...)
	if err != nil {
		c.closeMux()
		return fmt.Errorf("connecting to %s %s: %w", network, address, err)
	}
	c.conn = conn
	c.tls = tlsConfig != nil
	var header metadata.MD
	if err := c.checkHealth(ctx, grpc.Header(&header)); err != nil {
		conn.Close()
		c.closeMux()
		return err
	}
	c.pipesKept = c.stdioPipes && slices.Equal(header.Get(wire.StdioPipesHeader), []string{"1"})
	bgCtx, err := c.startBroker(tlsConfig, maxMsg, true)
	if err != nil {
		conn.Close()
		c.closeMux()
		return err
	}
	if !c.pipesKept {
		c.openStdio(bgCtx)
	}
	return nil
}

// dialer returns how the gRPC connection reaches the plugin: through the
// multiplexed session (Command.MultiplexBroker), or a new connection each
// time, whose unix listener is checked (lifecycle.listenerCheck).
func (c *Client) dialer(ctx context.Context, network, address string) (func(context.Context, string) (net.Conn, error), error) {
	check := c.life.listenerCheck()
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, address)
		if err == nil && network == "unix" && check != nil {
			// Only what the plugin serves, and for a reattach only this
			// user's: another process's socket gets neither calls nor a
			// Shutdown. Where the system cannot tell, it passes.
			if pid, uid, ok := socketPeer(conn); ok {
				if err = check(pid, uid, address); err != nil {
					conn.Close()
					return nil, err
				}
			}
		}
		return conn, err
	}
	if c.rawDial != nil {
		dial = c.rawDial
	}
	if c.multiplex {
		return c.openMux(ctx, dial)
	}
	if check != nil && network == "unix" {
		// Dialled once now, so that a refused socket says why instead
		// of failing the health check as unavailable.
		conn, err := dial(ctx, "")
		if err != nil {
			return nil, fmt.Errorf("connecting to %s %s: %w", network, address, err)
		}
		conn.Close()
	}
	return dial, nil
}

// startBroker makes the Client's broker and runs it on the plugin's broker
// stream, and returns the context of the Client's background work. A
// plugin that opens no broker stream fails the connection when required,
// and is left without a broker otherwise (a plugin service).
func (c *Client) startBroker(tlsConfig *tls.Config, maxMsg int, required bool) (context.Context, error) {
	bgCtx, cancel := context.WithCancel(context.Background())
	c.cancelBG = cancel
	var brokerRun brokerwire.Wire
	c.broker, brokerRun = brokerwire.New[*broker.Broker](brokerwire.Options{
		TLS:           tlsConfig,
		Unix:          listen.UnixConfig{Dir: c.brokerDir, Group: c.brokerGroup},
		ServerOptions: append([]grpc.ServerOption{grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg)}, c.opts.Telemetry.serverOptions(c.name, c.rep.binary)...),
		DialOptions:   append([]grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg))}, c.opts.Telemetry.dialOptions(c.name, c.rep.binary)...),
		Logger:        c.logger,
		Mux:           c.mux,
	})
	// The broker stream ends when Run does: Run gives up on a plugin that
	// stops reading it, and a Send it left blocked then returns.
	streamCtx, endStream := context.WithCancel(bgCtx)
	stream, err := pluginpb.NewGRPCBrokerClient(c.conn).StartStream(streamCtx)
	if err != nil {
		endStream()
		if required {
			cancel()
			return nil, fmt.Errorf("opening the broker stream: %w", err)
		}
		return bgCtx, nil
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		defer endStream()
		brokerRun.Run(endableStream{c.launch.brokerStream(stream, c.logger), endStream})
	}()
	return bgCtx, nil
}

// endableStream is the host's broker stream with the cancelling of its
// context: the broker reads it in the goroutine that runs it, and ends it
// when closed (brokerwire.EndableStream).
type endableStream struct {
	brokerwire.Stream
	end context.CancelFunc
}

// End ends the stream.
func (s endableStream) End() { s.end() }

// checkHealth makes the health check, with opts (grpc.Header, to read
// the answer's header).
func (c *Client) checkHealth(ctx context.Context, opts ...grpc.CallOption) error {
	hctx, cancel := context.WithTimeout(ctx, hostwire.DefaultHealthCheckTimeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(c.conn).Check(hctx, &healthpb.HealthCheckRequest{Service: wire.HealthService}, opts...)
	switch {
	case status.Code(err) == codes.Unimplemented:
		c.logger.Debug("plugin has no health service; assuming it serves")
		return nil
	case err != nil:
		return fmt.Errorf("health check of %s %s: %w", c.line.Network, c.line.Address, err)
	case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		return fmt.Errorf("%w (status %s)", ErrNotServing, resp.GetStatus())
	}
	return nil
}

// openStdio opens GRPCStdio and forwards it. Plugins without it (non-Go
// plugins) answer Unimplemented, which is fine.
func (c *Client) openStdio(ctx context.Context) {
	stream, err := pluginpb.NewGRPCStdioClient(c.conn).StreamStdio(ctx, &emptypb.Empty{}, grpc.MaxCallRecvMsgSize(maxStdioMessage))
	if err != nil {
		c.logger.Debug("plugin stdio stream unavailable", "error", err)
		return
	}
	stdout, stderr := c.syncStdout, c.syncStderr
	if stdout == nil {
		stdout = newLogSink(c.logger, "stdout")
	}
	if stderr == nil {
		stderr = newLogSink(c.logger, "stderr")
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		for {
			msg, err := stream.Recv()
			if err != nil {
				stdioEnded(c.logger, err)
				return
			}
			switch msg.GetChannel() {
			case pluginpb.StdioData_STDOUT:
				stdout.Write(msg.GetData())
			case pluginpb.StdioData_STDERR:
				stderr.Write(msg.GetData())
			default:
				c.logger.Debug("plugin stdio data on an unknown channel", "channel", msg.GetChannel())
			}
		}
	}()
}

// Conn is the gRPC connection to the plugin, for generated stubs.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Version is the negotiated app protocol version.
func (c *Client) Version() int { return c.line.AppVersion }

// Broker is the connection broker, for callbacks between host and plugin.
func (c *Client) Broker() *broker.Broker { return c.broker }

// TLS reports whether the connection uses TLS: AutoMTLS or the host's
// own (host.TLS).
func (c *Client) TLS() bool { return c.tls }

// Name is the plugin's name in logs.
func (c *Client) Name() string { return c.name }

// Ping checks the plugin's health within ctx.
func (c *Client) Ping(ctx context.Context) error { return c.checkHealth(ctx) }

// ReattachConfig describes the connection in the form Reattach and
// Terraform's TF_REATTACH_PROVIDERS take (go-plugin's
// Client.ReattachConfig). A plugin started with AutoMTLS cannot be
// reattached to (the certificate is not in the description).
func (c *Client) ReattachConfig() handshake.Reattach {
	return handshake.Reattach{
		Protocol:        handshake.ProtocolGRPC,
		ProtocolVersion: c.line.AppVersion,
		Pid:             c.Pid(),
		Addr:            handshake.ReattachAddr{Network: c.line.Network, String: c.line.Address},
	}
}

// readLine reads one line of at most limit bytes.
func readLine(br *bufio.Reader, limit int) (string, bool, error) {
	var sb strings.Builder
	for {
		b, err := br.ReadByte()
		if err != nil {
			return sb.String(), false, err
		}
		if b == '\n' {
			return sb.String(), true, nil
		}
		if sb.Len() >= limit {
			return sb.String(), false, fmt.Errorf("handshake line longer than %d bytes", limit)
		}
		sb.WriteByte(b)
	}
}

// checkExecutable says, in words a person can act on, why path cannot be
// started as a plugin binary: missing, a directory, not a regular file or
// not executable. A path without a slash is looked up in PATH first, as
// exec does.
func checkExecutable(path string) error {
	if !osdep.HasDir(path) {
		p, err := exec.LookPath(path)
		if err != nil {
			return fmt.Errorf("plugin binary %q is not in PATH: give its path", path)
		}
		path = p
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("plugin binary %s does not exist", path)
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not a plugin binary: name the binary inside it", path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (mode %v), so it cannot be a plugin binary", path, fi.Mode())
	case !osdep.Executable(fi.Mode()):
		return fmt.Errorf("%s is not executable (mode %v): chmod +x it", path, fi.Mode().Perm())
	}
	return nil
}

// inherited returns the part of the host's environment a plugin gets:
// all of it, or only the variables Command.InheritEnv names; never the
// handshake variables or the cookie's key of the host's own environment
// (a host that is itself a plugin has them), which Start sets anew.
func inherited(cmd Command, environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(handshake.Variables, k) || k == cmd.Cookie.Key {
			continue
		}
		if cmd.InheritEnv != nil && !slices.Contains(cmd.InheritEnv, k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
