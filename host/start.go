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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plugkit/plugkit/automtls"
	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/internal/listen"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/wire"
)

// ErrNotServing reports a plugin whose health check answered NOT_SERVING.
var ErrNotServing = errors.New("plugin reports NOT_SERVING on its health check")

// Client is a running plugin and the gRPC connection to it.
type Client struct {
	cfg     Config
	name    string
	logger  *slog.Logger
	line    handshake.Line
	conn    *grpc.ClientConn
	broker  *broker.Broker
	mux     brokerwire.Mux // the multiplexed connection (Config.MultiplexBroker); nil without
	started time.Time
	ready   time.Duration
	tls     bool // the connection uses TLS (AutoMTLS or Config.TLS)

	proc     *process // nil when reattached
	sock     *sockDir // the plugin's private socket directory; nil when reattached
	launch   *Launch  // how it was launched (Config.Runner); nil when reattached
	pid      int
	remote   []string       // the endpoints of a plugin service (Dial); nil otherwise
	debug    bool           // reattached to a plugin in debug mode (ReattachConfig.Test)
	sameUser bool           // reattached: a unix socket's listener must run as this user
	bg       sync.WaitGroup // stdio forwarding and the broker stream
	cancelBG context.CancelFunc

	closeOnce sync.Once
	closeErr  error

	// stopping is set by Close and Kill: an exit after it is expected.
	stopping  atomic.Bool
	deathOnce sync.Once
	deathErr  error // the plugin exited on its own, while in use
}

// Start launches the plugin, waits for its handshake, connects and checks
// its health. ctx bounds the whole start; the plugin keeps running after
// Start returns, until Close.
func Start(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	name := cfg.name()
	logger := cfg.logger().With("plugin", name)
	started := time.Now()

	var id *automtls.Identity
	if !cfg.NoAutoMTLS && cfg.TLS == nil {
		var err error
		if id, err = automtls.New(); err != nil {
			return nil, err
		}
	}
	if err := CheckExecutable(cfg.Path); err != nil {
		return nil, &StartError{Name: name, Err: err}
	}
	sock, err := newSockDir(cfg.UnixSocketDir)
	if err != nil {
		return nil, &StartError{Name: name, Err: err}
	}
	env := handshake.Env{
		Cookie:          cfg.Cookie,
		Versions:        cfg.Versions,
		MinPort:         cfg.MinPort,
		MaxPort:         cfg.MaxPort,
		UnixSocketDir:   sock.path,
		UnixSocketGroup: cfg.UnixSocketGroup,
		Network:         cfg.Network,
		Multiplex:       cfg.MultiplexBroker,
	}
	if id != nil {
		env.ClientCert = id.PEM()
	}
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Env = append(append(inherited(cfg, os.Environ()), cfg.Env...), env.Environ()...)
	cmd.Dir = cfg.Dir
	if cfg.SHA256 != "" {
		f, err := openPinned(ctx, cfg.Path, cfg.SHA256)
		if err != nil {
			sock.remove()
			return nil, &StartError{Name: name, Err: err}
		}
		defer f.Close() // the child has its own copy once started
		execPinned(cmd, f)
	}
	launch, err := cfg.prepare(cmd, sock.path)
	if err != nil {
		sock.remove()
		return nil, &StartError{Name: name, Err: err}
	}
	if launch.SocketGroup != "" && sock.path != "" {
		if err := listen.ShareDir(sock.path, launch.SocketGroup); err != nil {
			sock.remove()
			setting := "Config.UnixSocketGroup"
			if launch.SocketGroup != cfg.UnixSocketGroup {
				setting = "Launch.SocketGroup (set by Config.Runner)"
			}
			return nil, &StartError{Name: name, Err: fmt.Errorf("%s: %w", setting, err)}
		}
	}
	cmd = launch.Cmd
	proc, err := startProcess(cmd, logger, cfg.StderrCopy)
	if err != nil {
		sock.remove()
		return nil, &StartError{Name: name, Err: fmt.Errorf("starting %s: %w", cfg.Path, err)}
	}
	fail := func(err error) (*Client, error) {
		proc.kill()
		sock.remove()
		tail := proc.stderr.lastLines()
		var exit *ExitError
		if errors.As(err, &exit) {
			exit.Stderr = tail
			return nil, exit
		}
		return nil, &StartError{Name: name, Err: err, Stderr: tail}
	}

	lineText, err := proc.readHandshake(ctx, cmp.Or(cfg.StartTimeout, DefaultStartTimeout), name)
	if err != nil {
		return fail(err)
	}
	line, err := handshake.Parse(lineText)
	if err != nil {
		return fail(err)
	}
	if line.Network, line.Address, err = launch.pluginToHost(line.Network, line.Address); err != nil {
		return fail(err)
	}
	if !slices.Contains(cfg.Versions, line.AppVersion) {
		return fail(&handshake.VersionError{Plugin: []int{line.AppVersion}, Host: cfg.Versions})
	}
	if err := checkMultiplex(cfg, line); err != nil {
		return fail(err)
	}
	tlsConfig, err := clientTLS(id, cfg.TLS, line)
	if err != nil {
		return fail(err)
	}
	if id == nil && line.Network == "tcp" {
		logger.Warn("AutoMTLS is off and the plugin listens on TCP: any local user can connect to it and call it; keep AutoMTLS on, or use a unix socket", "address", line.Address)
	}
	c := &Client{cfg: cfg, name: name, logger: logger, line: line, started: started, proc: proc, sock: sock, pid: cmd.Process.Pid, launch: launch}
	if err := c.connect(ctx, tlsConfig); err != nil {
		return fail(err)
	}
	c.ready = time.Since(started)
	proc.forwarding = true
	go proc.forwardStdout(logger)
	go c.watchExit()
	return c, nil
}

// watchExit reports a plugin that exits while its host still uses it: one
// WARN record with the exit status and the tail of its stderr, and the
// error Close returns.
func (c *Client) watchExit() {
	<-c.proc.exited
	if !c.stopping.Load() {
		c.reportDeath()
	}
}

// reportDeath records and logs, once, that the plugin exited on its own.
func (c *Client) reportDeath() error {
	c.deathOnce.Do(func() {
		c.proc.waitStderr()
		err := &UnexpectedExitError{Name: c.name, State: c.proc.state.String(), Stderr: c.proc.stderr.lastLines()}
		c.deathErr = err
		c.logger.Warn("plugin exited while its host was using it", "status", err.State, "stderr", strings.Join(err.Stderr, "\n"))
	})
	return c.deathErr
}

func clientTLS(id *automtls.Identity, own *tls.Config, line handshake.Line) (*tls.Config, error) {
	switch {
	case own != nil && line.ServerCert != nil:
		return nil, errors.New("the plugin answered with an AutoMTLS certificate, but the host was given its own TLS (Config.TLS) and did not ask for AutoMTLS: drop Config.TLS to use AutoMTLS")
	case own != nil:
		return own.Clone(), nil
	case id == nil && line.ServerCert != nil:
		return nil, errors.New("the plugin sent a TLS certificate, but AutoMTLS is off on the host: turn AutoMTLS on")
	case id == nil:
		return nil, nil
	case line.ServerCert == nil:
		return nil, errors.New("the plugin answered without a certificate: it does not support AutoMTLS (or ignored PLUGIN_CLIENT_CERT), or it serves its own TLS (then give the host its PKI in Config.TLS); connect with AutoMTLS off (--no-mtls, Config.NoAutoMTLS) if plain text is intended")
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
	maxMsg := cmp.Or(c.cfg.MaxMessageSize, wire.DefaultMaxMessageSize)
	creds := insecure.NewCredentials()
	if tlsConfig != nil {
		creds = credentials.NewTLS(tlsConfig)
	}
	network, address := c.line.Network, c.line.Address
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, address)
		if err == nil && network == "unix" {
			// Only what the plugin serves, and for a reattach only this
			// user's: another process's socket gets neither calls nor a
			// Shutdown.
			if err = c.checkListener(conn, address); err != nil {
				conn.Close()
				return nil, err
			}
		}
		return conn, err
	}
	if c.cfg.MultiplexBroker {
		var err error
		if dial, err = c.openMux(ctx, dial); err != nil {
			return err
		}
	} else if (c.proc != nil || c.sameUser) && network == "unix" {
		// Dialled once now, so that a refused socket says why instead
		// of failing the health check as unavailable.
		conn, err := dial(ctx, "")
		if err != nil {
			return fmt.Errorf("connecting to %s %s: %w", network, address, err)
		}
		conn.Close()
	}
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(dial),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)),
	}, c.cfg.DialOptions...)
	conn, err := grpc.NewClient("passthrough:///"+address, opts...)
	if err != nil {
		c.closeMux()
		return fmt.Errorf("connecting to %s %s: %w", network, address, err)
	}
	c.conn = conn
	c.tls = tlsConfig != nil
	if err := c.checkHealth(ctx); err != nil {
		conn.Close()
		c.closeMux()
		return err
	}

	bgCtx, cancel := context.WithCancel(context.Background())
	c.cancelBG = cancel
	var brokerRun brokerwire.Wire
	c.broker, brokerRun = brokerwire.New[*broker.Broker](brokerwire.Options{
		TLS:           tlsConfig,
		Unix:          listen.UnixConfig{Dir: c.brokerDir(), Group: c.socketGroup()},
		ServerOptions: []grpc.ServerOption{grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg)},
		DialOptions:   []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg))},
		Logger:        c.logger,
		Mux:           c.mux,
	})
	// The broker stream ends when Run does: Run gives up on a plugin that
	// stops reading it, and a Send it left blocked then returns.
	streamCtx, endStream := context.WithCancel(bgCtx)
	stream, err := pluginpb.NewGRPCBrokerClient(conn).StartStream(streamCtx)
	if err != nil {
		endStream()
		cancel()
		conn.Close()
		c.closeMux()
		return fmt.Errorf("opening the broker stream: %w", err)
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		defer endStream()
		brokerRun.Run(c.launch.brokerStream(stream, c.logger))
	}()
	c.openStdio(bgCtx)
	return nil
}

func (c *Client) checkHealth(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, DefaultHealthTimeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(c.conn).Check(hctx, &healthpb.HealthCheckRequest{Service: wire.HealthService})
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
	stream, err := pluginpb.NewGRPCStdioClient(c.conn).StreamStdio(ctx, &emptypb.Empty{})
	if err != nil {
		c.logger.Debug("plugin stdio stream unavailable", "error", err)
		return
	}
	var stdout, stderr io.Writer = c.cfg.Stdout, c.cfg.Stderr
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
				if code := status.Code(err); code != codes.Canceled && code != codes.Unavailable && code != codes.Unimplemented && !errors.Is(err, io.EOF) {
					c.logger.Debug("plugin stdio stream ended", "error", err)
				}
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

// brokerDir is where the host's brokered servers make their sockets: the
// plugin's private directory, or for a reattached plugin Config's.
func (c *Client) brokerDir() string {
	if c.sock != nil {
		return c.sock.path
	}
	return c.cfg.UnixSocketDir
}

// socketGroup is the group of the host's brokered sockets: the launch's
// (Config.UnixSocketGroup, unless the runner changed it), or for a
// reattached plugin the Config's.
func (c *Client) socketGroup() string {
	if c.launch != nil {
		return c.launch.SocketGroup
	}
	return c.cfg.UnixSocketGroup
}

// Conn is the gRPC connection to the plugin, for generated stubs.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Version is the negotiated app protocol version.
func (c *Client) Version() int { return c.line.AppVersion }

// Broker is the connection broker, for callbacks between host and plugin.
func (c *Client) Broker() *broker.Broker { return c.broker }

// Pid is the plugin's process ID.
func (c *Client) Pid() int { return c.pid }

// Network and Address say where the plugin listens.
func (c *Client) Network() string { return c.line.Network }

// Address is the socket path or host:port of the plugin.
func (c *Client) Address() string { return c.line.Address }

// TLS reports whether the connection uses TLS: AutoMTLS or the host's
// own (Config.TLS).
func (c *Client) TLS() bool { return c.tls }

// Name is the plugin's name in logs.
func (c *Client) Name() string { return c.name }

// StartDuration is how long Start took, from launch to a healthy
// connection.
func (c *Client) StartDuration() time.Duration { return c.ready }

// Exited is closed when the plugin process has exited. For a reattached
// plugin it is never closed.
func (c *Client) Exited() <-chan struct{} {
	if c.proc == nil {
		return nil
	}
	return c.proc.exited
}

// Ping checks the plugin's health within ctx.
func (c *Client) Ping(ctx context.Context) error { return c.checkHealth(ctx) }

// ReattachConfig describes the connection in the form Reattach and
// Terraform's TF_REATTACH_PROVIDERS take. A plugin started with AutoMTLS
// cannot be reattached to (the certificate is not in the description).
func (c *Client) ReattachConfig() ReattachConfig {
	return ReattachConfig{
		Protocol:        handshake.ProtocolGRPC,
		ProtocolVersion: c.line.AppVersion,
		Pid:             c.pid,
		Addr:            ReattachAddr{Network: c.line.Network, String: c.line.Address},
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

// CheckExecutable says, in words a person can act on, why path cannot be
// started as a plugin binary: missing, a directory, not a regular file or
// not executable. A path without a slash is looked up in PATH first, as
// exec does.
func CheckExecutable(path string) error {
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
// all of it, or only the variables Config.InheritEnv names; never the
// handshake variables or the cookie's key of the host's own environment
// (a host that is itself a plugin has them), which Start sets anew.
func inherited(cfg Config, environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(handshake.Variables, k) || k == cfg.Cookie.Key {
			continue
		}
		if cfg.InheritEnv != nil && !slices.Contains(cfg.InheritEnv, k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
