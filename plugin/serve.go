package plugin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/plugkit/plugkit/automtls"
	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/internal/guestcall"
	"github.com/plugkit/plugkit/internal/listen"
	"github.com/plugkit/plugkit/wire"
)

// DefaultShutdownTimeout is how long a plugin lets in-flight calls finish
// after it is asked to stop, before it stops hard. It is below go-plugin's
// 2 s kill timeout, so a go-plugin host never has to kill a plugkit plugin.
const DefaultShutdownTimeout = 1500 * time.Millisecond

// parentPollInterval is how often the plugin checks that its host is
// alive: well inside the 1 s within which an orphaned plugin must exit.
const parentPollInterval = 100 * time.Millisecond

// watchedPollInterval is the poll's interval where the kernel tells of
// the host's death at once (Linux: PR_SET_PDEATHSIG, the plugin's own
// signal or the SIGKILL plugkit's host sets): the poll is then only a
// safety net, and an idle plugin wakes once a second for it, not ten
// times (300 idle plugins polling every 100 ms took ~17% of a 2-CPU
// machine, and slowed closing them all at once; see BENCHMARKS.md).
const watchedPollInterval = time.Second

// Register registers the gRPC services of one app protocol version on s.
// b is the broker, for services that call back into the host.
type Register func(s *grpc.Server, b *broker.Broker) error

// Config describes a plugin. Cookie and Versions are required; every
// other field has a useful zero value.
type Config struct {
	// Cookie is the magic cookie the host must set.
	Cookie handshake.Cookie
	// Versions maps each app protocol version the plugin speaks to the
	// function that registers that version's services. The host's highest
	// mutual version is chosen; only its services are registered.
	Versions map[int]Register
	// Logger receives plugkit's own diagnostics. Nil means NewLogger at
	// info level: hclog JSON on standard error, read by the host.
	Logger *slog.Logger
	// ServerOptions are added to the gRPC server's options. A service
	// (EnvListen) sets its own grpc.InTapHandle, of which gRPC allows one:
	// do not add another; and it reads unbuffered, whatever
	// grpc.ReadBufferSize says. grpc.Creds here replaces the service's
	// transport, and then its in-flight budget cannot see the sizes of
	// request messages: it counts each at the largest it may be, so a
	// connection's calls are read one at a time, and the service's mostly
	// so (see ServiceLimits.MaxInflightBytes).
	ServerOptions []grpc.ServerOption
	// MaxMessageSize bounds gRPC messages both ways; 0 means
	// wire.DefaultMaxMessageSize.
	MaxMessageSize int
	// ShutdownTimeout bounds a graceful stop; 0 means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Limits bounds what hosts may hold of the plugin when it runs as a
	// network service (EnvListen); the zero value means the defaults.
	Limits ServiceLimits
	// TLSProvider, for teams with their own PKI, returns the TLS
	// configuration the plugin serves with (go-plugin's
	// ServeConfig.TLSProvider). The configuration is used as it is: to
	// require the host's certificate, set ClientAuth and ClientCAs. The
	// broker's connections use it too, so it should also work as a client
	// configuration (Certificates, RootCAs, ServerName). A plugin with a
	// TLSProvider refuses a host that asks for AutoMTLS: the host must be
	// given this PKI instead (plugkit: host.TLS; go-plugin:
	// ClientConfig.TLSConfig with AutoMTLS off). Nil means AutoMTLS when
	// the host asks for it, else plain text.
	TLSProvider func() (*tls.Config, error)
	// Name names the plugin in debug mode's reattach line (see EnvDebug);
	// empty means the executable's base name.
	Name string
	// Debug serves in debug mode whatever the environment says; setting
	// PLUGKIT_DEBUG=1 in the plugin's environment does the same.
	Debug bool
	// DebugAnnounce writes debug mode's announcement of where the plugin
	// serves; nil means DebugLine (PLUGKIT_REATTACH='{...}').
	DebugAnnounce func(w io.Writer, name string, r handshake.Reattach) error
	// TracerProvider receives the spans of the calls the plugin serves
	// and makes (its brokered callbacks), which join the host's traces.
	// Nil means, in a plugin that imports package plugin/traceexport
	// (which links the SDK and the exporters), one made from the standard
	// OTEL_* environment for traces, which a tracing plugkit host passes
	// on with its request to export (PLUGKIT_EXPORT_TRACES=1; without it
	// inherited OTEL_* variables export nothing): OTEL_TRACES_EXPORTER (otlp,
	// console or none, or a comma-separated list),
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL
	// (grpc or http/protobuf, the default), and what OpenTelemetry's
	// exporters read themselves (OTEL_EXPORTER_OTLP_ENDPOINT, headers,
	// timeout, ...), flushed when Run returns; the first failed export
	// is logged once. Without an exporter
	// configured, the trace context the host sends still reaches the
	// calls' contexts (for log records' trace_id), and with no
	// TRACEPARENT either the plugin traces nothing, at no cost. Set a
	// provider of your own for another exporter.
	TracerProvider trace.TracerProvider
}

// Serve runs the plugin and exits the process when it is done: status 0
// after the host asked it to stop, 1 after an error, which is written to
// standard error first. A person who runs the binary by hand gets a
// message saying what it is. Interrupts (Ctrl-C in a terminal, which
// reach the host and its plugins alike) are ignored: the host decides
// when its plugins stop. SIGTERM stops the plugin gracefully.
func Serve(cfg Config) {
	ctx, stop := serveContext(cfg)
	err := RunIn(ctx, cfg, Harness{exits: true})
	stop()
	if err != nil {
		fmt.Fprintln(processStderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Run serves the plugin until ctx ends, the host calls Shutdown, or the
// parent process dies. It returns nil after a requested stop. In debug
// mode (EnvDebug) it needs no host: see EnvDebug. To serve a plugin inside
// a test, with the host in the same process, use package plugintest (or
// RunIn).
func Run(ctx context.Context, cfg Config) error {
	return RunIn(ctx, cfg, Harness{})
}

// RunIn is Run with the process around the plugin replaced by h (see
// Harness): its environment, its standard output and standard error, and
// the watch of its parent. Several plugins may run at once in one
// program, each with a Harness of its own.
func RunIn(ctx context.Context, cfg Config, h Harness) error {
	if len(cfg.Versions) == 0 {
		return errors.New("plugin: Config.Versions is empty: register the services of at least one app protocol version")
	}
	if h.LookupEnv == nil {
		h.LookupEnv = os.LookupEnv
	}
	logger := cfg.Logger
	if logger == nil {
		logger = NewLogger(slog.LevelInfo)
	}
	tr := cfg.newTracing(ctx, h.LookupEnv, logger)
	defer tr.close()
	if addr, _ := h.LookupEnv(EnvListen); addr != "" {
		cfg.ServerOptions = append(slices.Clip(cfg.ServerOptions), tr.serverOptions()...)
		return runService(ctx, cfg, addr, h, logger)
	}
	return runHosted(ctx, cfg, h, logger, tr)
}

// hosted is a plugin serving the host that started it (or, in debug
// mode, the hosts that reattach to it).
type hosted struct {
	cfg      Config
	h        Harness
	logger   *slog.Logger
	srv      *grpc.Server
	health   *health.Server
	brk      *broker.Broker
	stdio    *stdioServer
	mux      brokerwire.Mux // nil unless the host asked for multiplexing
	shutdown chan bool      // the host's Shutdown: true when it said it is idle (wire.ShutdownIdleHeader)
	tracing  *tracing       // nil without
	// pipes leaves os.Stdout and os.Stderr on the process's own pipes,
	// which the host asked for (wire.EnvStdioPipes) and is told of on
	// health checks (wire.StdioPipesHeader).
	pipes bool
	calls *guestcall.Server // a guest's calls without HTTP/2; nil without
}

// runHosted negotiates with the host through the environment, serves,
// prints the handshake line and serves until it is asked to stop.
func runHosted(ctx context.Context, cfg Config, h Harness, logger *slog.Logger, tr *tracing) error {
	env, debug, err := readEnv(cfg, h.LookupEnv)
	if err != nil {
		return err
	}
	if debug {
		h.KeepStdio, h.NoParentWatch = true, true
	}
	// The watch of the host begun at the start (atStart) now ends in an
	// orderly stop (wait) rather than an exit.
	hostGone, unclaim := atStart.claim(h.NoParentWatch)
	defer unclaim()
	version := chooseVersion(cfg.Versions, env.Versions, logger)
	tlsConfig, serverCert, err := serverTLS(cfg, env)
	if err != nil {
		return err
	}
	ln, err := openListener(env)
	if err != nil {
		return fmt.Errorf("plugin: %w", err)
	}
	defer ln.Close()
	p := &hosted{cfg: cfg, h: h, logger: logger, stdio: newStdioServer(), shutdown: make(chan bool, 1), tracing: tr}
	// A plugkit host that reads the pipes itself needs no stdio stream
	// (wire.EnvStdioPipes): the output stays on them.
	pipes, _ := h.LookupEnv(wire.EnvStdioPipes)
	p.pipes = !debug && pipes == "1"
	serveLn, mux := multiplex(ln, env)
	if mux != nil {
		defer mux.Close()
	}
	p.mux = mux
	if err := p.build(version, tlsConfig, env); err != nil {
		return err
	}
	defer p.brk.Close()

	serveLn, address := p.splitCalls(serveLn)
	served := make(chan error, 1)
	go func() { served <- p.srv.Serve(serveLn) }()
	line := handshake.Line{
		CoreVersion:  handshake.CoreVersion,
		AppVersion:   version,
		Network:      ln.Addr().Network(),
		Address:      ln.Addr().String(),
		Protocol:     handshake.ProtocolGRPC,
		ServerCert:   serverCert,
		Multiplex:    mux != nil,
		HasMultiplex: env.Multiplex,
	}
	if address != "" {
		line.Address = address
	}
	if err := p.announce(line, debug); err != nil {
		p.srv.Stop()
		return err
	}
	if !h.KeepStdio && !p.pipes {
		restore, err := p.stdio.capture()
		if err != nil {
			p.srv.Stop()
			return fmt.Errorf("plugin: redirecting stdout and stderr: %w", err)
		}
		defer restore()
	}
	logger.Debug("plugin serving", "network", line.Network, "address", line.Address, "version", version, "tls", tlsConfig != nil)
	return p.wait(ctx, served, hostGone)
}

// build makes the broker and the server, with the services of version.
func (p *hosted) build(version int, tlsConfig *tls.Config, env handshake.Env) error {
	maxMsg := p.cfg.maxMessageSize()
	brk, brokerRun := brokerwire.New[*broker.Broker](brokerwire.Options{
		Mux:           p.mux,
		TLS:           tlsConfig,
		Unix:          listen.UnixConfig{Dir: env.UnixSocketDir, Group: env.UnixSocketGroup},
		ServerOptions: append([]grpc.ServerOption{grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg)}, p.tracing.serverOptions()...),
		DialOptions:   append([]grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg))}, p.tracing.dialOptions()...),
	})
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg)}
	if tlsConfig != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConfig)))
	}
	opts = append(opts, platformServerOptions()...)
	opts = append(opts, p.cfg.ServerOptions...)
	opts = append(opts, p.tracing.serverOptions()...)
	var healthWrap func(*health.Server) healthpb.HealthServer
	if p.pipes {
		healthWrap = func(hs *health.Server) healthpb.HealthServer { return pipesHealth{hs} }
	}
	srv, hs, err := p.cfg.newServer(version, opts, serverParts{
		health:     healthWrap,
		broker:     brokerRun.Handler(),
		controller: controller{shutdown: p.shutdown},
		stdio:      p.stdio,
		brk:        brk,
	})
	if err != nil {
		brk.Close()
		return err
	}
	p.srv, p.health, p.brk = srv, hs, brk
	return nil
}

// pipesHeader is what pipesHealth tells the host.
var pipesHeader = metadata.Pairs(wire.StdioPipesHeader, "1")

// pipesHealth is the health service of a plugin whose output stays on its
// pipes: its answers to Check say so (wire.StdioPipesHeader), and the
// host then opens no stdio stream.
type pipesHealth struct{ *health.Server }

// Check answers as the health server does, with the header.
func (h pipesHealth) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	grpc.SetHeader(ctx, pipesHeader)
	return h.Server.Check(ctx, req)
}

// announce writes the handshake line (in debug mode, the reattach line)
// where the host reads it.
func (p *hosted) announce(line handshake.Line, debug bool) error {
	out := p.h.Handshake
	if out == nil {
		out = handshakeOut()
	}
	var err error
	if debug {
		err = announceDebug(p.cfg, out, line)
	} else {
		_, err = io.WriteString(out, line.String()+"\n")
	}
	if err != nil {
		return fmt.Errorf("plugin: writing the handshake: %w", err)
	}
	if f, ok := out.(*os.File); ok {
		f.Sync()
	}
	return nil
}

// wait serves until the host asks to stop, ctx ends, the parent process
// dies (parentGone, from the watch begun at the start; nil without one)
// or the server fails, and stops the server accordingly.
func (p *hosted) wait(ctx context.Context, served <-chan error, parentGone <-chan struct{}) error {
	if parentGone == nil && !p.h.NoParentWatch {
		watchCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		parentGone = watchParent(watchCtx, p.h.LookupEnv)
	}
	// The broker and stdio streams live as long as the connection; end them
	// first, so that a graceful stop waits only for the host's own calls.
	endStreams := func() {
		p.stdio.close()
		p.brk.Close()
	}
	// A guest's calls without HTTP/2 end as the server's do: a graceful
	// stop waits for them, within the same bound.
	defer p.stopCalls()
	select {
	case idle := <-p.shutdown:
		p.logger.Debug("plugin stopping: the host asked", "idle", idle)
		if idle && p.pipes && p.h.exits {
			// Nothing to drain, and the process exits when Run returns
			// (Serve): the exit closes every connection at once, where
			// Stop would end each in turn, waking goroutine after
			// goroutine for nothing (BENCHMARKS.md, "Many plugins at
			// once", round 5). Run's deferred steps still run: the
			// broker's close and its held-back warnings, the socket's
			// removal, the flush of traces.
			return nil
		}
		endStreams()
		if idle && p.pipes {
			// No call of the host's in flight and no stdio stream to
			// drain: nothing a graceful stop would wait for.
			p.srv.Stop()
			break
		}
		stopGracefully(p.srv, p.health, p.cfg.shutdownTimeout(), nil)
	case <-ctx.Done():
		p.logger.Debug("plugin stopping", "reason", context.Cause(ctx))
		endStreams()
		stopGracefully(p.srv, p.health, p.cfg.shutdownTimeout(), nil)
	case <-parentGone:
		p.logger.Warn("plugin stopping: its host process is gone")
		endStreams()
		p.srv.Stop()
	case err := <-served:
		endStreams()
		if hungUp(err, p.mux) {
			p.logger.Debug("plugin stopping: its host closed the multiplexed connection")
			return nil
		}
		if err != nil {
			return fmt.Errorf("plugin: serving: %w", err)
		}
	}
	return nil
}

// stopCalls waits for a guest's calls without HTTP/2 to end, within the
// shutdown timeout, and then ends them.
func (p *hosted) stopCalls() {
	if p.calls == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.shutdownTimeout())
	defer cancel()
	p.calls.Shutdown(ctx)
}

// serverParts are the services that differ between a plugin serving its
// host and a plugin service (EnvListen).
type serverParts struct {
	// health wraps the health server; nil registers it as it is.
	health     func(*health.Server) healthpb.HealthServer
	broker     pluginpb.GRPCBrokerServer
	controller pluginpb.GRPCControllerServer
	stdio      pluginpb.GRPCStdioServer // nil: none
	brk        *broker.Broker           // given to the version's Register
}

// newServer builds the gRPC server a plugin serves on, in either mode:
// health (wire.HealthService serving), go-plugin's broker, controller and
// stdio services, the services of version, and reflection over them all.
func (cfg Config) newServer(version int, opts []grpc.ServerOption, parts serverParts) (*grpc.Server, *health.Server, error) {
	srv := grpc.NewServer(opts...)
	hs := health.NewServer()
	hs.SetServingStatus(wire.HealthService, healthpb.HealthCheckResponse_SERVING)
	var healthSrv healthpb.HealthServer = hs
	if parts.health != nil {
		healthSrv = parts.health(hs)
	}
	healthpb.RegisterHealthServer(srv, healthSrv)
	pluginpb.RegisterGRPCBrokerServer(srv, parts.broker)
	pluginpb.RegisterGRPCControllerServer(srv, parts.controller)
	if parts.stdio != nil {
		pluginpb.RegisterGRPCStdioServer(srv, parts.stdio)
	}
	if err := cfg.Versions[version](srv, parts.brk); err != nil {
		return nil, nil, fmt.Errorf("plugin: registering the services of protocol version %d: %w", version, err)
	}
	registerReflection(srv)
	return srv, hs, nil
}

// ErrTLSConflict reports a plugin with its own TLS (Config.TLSProvider)
// started by a host that asked for AutoMTLS.
var ErrTLSConflict = errors.New("the host asked for AutoMTLS (it set " + handshake.EnvClientCert + ") but this plugin serves its own TLS (Config.TLSProvider): give the host this plugin's PKI instead (plugkit: host.TLS; go-plugin: ClientConfig.TLSConfig with AutoMTLS false)")

// serverTLS returns the TLS configuration to serve with, and the
// certificate to send in the handshake line (AutoMTLS only).
func serverTLS(cfg Config, env handshake.Env) (*tls.Config, []byte, error) {
	if cfg.TLSProvider != nil {
		if len(env.ClientCert) > 0 {
			return nil, nil, fmt.Errorf("plugin: %w", ErrTLSConflict)
		}
		tc, err := cfg.TLSProvider()
		if err != nil {
			return nil, nil, fmt.Errorf("plugin: Config.TLSProvider: %w", err)
		}
		if tc == nil {
			return nil, nil, errors.New("plugin: Config.TLSProvider returned no configuration and no error: return a *tls.Config, or leave TLSProvider nil")
		}
		return tc, nil, nil
	}
	if len(env.ClientCert) == 0 {
		return nil, nil, nil
	}
	hostCert, err := automtls.ParsePEM(env.ClientCert)
	if err != nil {
		return nil, nil, fmt.Errorf("plugin: %s is set but unusable: %w", handshake.EnvClientCert, err)
	}
	id, err := automtls.New()
	if err != nil {
		return nil, nil, err
	}
	return id.Config(hostCert), id.DER(), nil
}

// maxMessageSize is MaxMessageSize or its default.
func (cfg Config) maxMessageSize() int {
	if cfg.MaxMessageSize == 0 {
		return wire.DefaultMaxMessageSize
	}
	return cfg.MaxMessageSize
}

// registerReflection adds server reflection (v1 and v1alpha) for every
// service on srv, go-plugin's internal ones included.
func registerReflection(srv *grpc.Server) {
	opts := reflection.ServerOptions{Services: srv, DescriptorResolver: pluginpb.Files, ExtensionResolver: protoregistry.GlobalTypes}
	reflectionv1.RegisterServerReflectionServer(srv, reflection.NewServerV1(opts))
	reflectionv1alpha.RegisterServerReflectionServer(srv, reflection.NewServer(opts))
}

func chooseVersion(versions map[int]Register, host []int, logger *slog.Logger) int {
	mine := make([]int, 0, len(versions))
	for v := range versions {
		mine = append(mine, v)
	}
	sort.Ints(mine)
	if len(host) == 0 {
		return mine[len(mine)-1]
	}
	v, err := handshake.Negotiate(mine, host)
	if err != nil {
		// As go-plugin plugins do, answer with our lowest version so the
		// host fails at once with its own message instead of timing out;
		// say here what we support, which the handshake cannot.
		logger.Error("no app protocol version in common with the host", "plugin_versions", mine, "host_versions", host, "error", err)
		return slices.Min(mine)
	}
	return v
}

// shutdownTimeout is ShutdownTimeout or its default.
func (cfg Config) shutdownTimeout() time.Duration {
	if cfg.ShutdownTimeout <= 0 {
		return DefaultShutdownTimeout
	}
	return cfg.ShutdownTimeout
}

// hardStopGrace is how long, at most, a stop waits for the hard Stop
// after its deadline: Stop closes the connections and returns at once
// unless one is still in its handshake, which closeConns ends.
const hardStopGrace = 200 * time.Millisecond

// stopGracefully lets in-flight calls finish for up to timeout, then
// closes the connections (closeConns, when not nil: the server's
// listener's, handshakes included), stops hard and returns, without
// waiting for handlers that ignore their context.
func stopGracefully(srv *grpc.Server, h *health.Server, timeout time.Duration, closeConns func()) {
	h.Shutdown()
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(max(timeout, 0))
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	if closeConns != nil {
		closeConns()
	}
	stopped := make(chan struct{})
	go func() {
		srv.Stop()
		close(stopped)
	}()
	grace := time.NewTimer(hardStopGrace)
	defer grace.Stop()
	select {
	case <-stopped:
	case <-grace.C:
	}
}

type controller struct {
	pluginpb.UnimplementedGRPCControllerServer
	shutdown chan<- bool
}

// Shutdown asks Run to stop, and tells it whether the host said it has no
// call in flight (wire.ShutdownIdleHeader). It returns at once; the stop
// follows the reply.
func (c controller) Shutdown(ctx context.Context, _ *pluginpb.Empty) (*pluginpb.Empty, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	select {
	case c.shutdown <- slices.Equal(md.Get(wire.ShutdownIdleHeader), []string{"1"}):
	default:
	}
	return &pluginpb.Empty{}, nil
}
