package plugin

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/wire"
)

// The environment of a plugin run as a network service. A plugin started
// with EnvListen set serves on that address for as long as it runs,
// instead of printing a handshake line for one host: no cookie, no
// handshake; the hosts' client certificates are the authentication.
const (
	// EnvListen is the HOST:PORT to serve on ("0.0.0.0:7000", "[::]:7000",
	// "127.0.0.1:7000").
	EnvListen = handshake.EnvListen
	// EnvTLSCert and EnvTLSKey are the service's certificate and key (PEM
	// files); EnvTLSClientCA holds the CA certificates (PEM) that sign the
	// hosts' client certificates. All three are required.
	EnvTLSCert     = handshake.EnvTLSCert
	EnvTLSKey      = handshake.EnvTLSKey
	EnvTLSClientCA = handshake.EnvTLSClientCA
	// EnvInsecureLoopback=1 allows serving without TLS, on a loopback
	// address only: for trying a plugin out on one machine.
	EnvInsecureLoopback = handshake.EnvInsecureLoopback
	// EnvDrainTimeout bounds the drain after SIGTERM (a Go duration such
	// as "20s"); empty means Config.ShutdownTimeout, or
	// DefaultDrainTimeout when that is zero.
	EnvDrainTimeout = "PLUGKIT_DRAIN_TIMEOUT"
	// EnvHealthListen, when set, is a second HOST:PORT that serves only
	// grpc.health.v1.Health, in plain text, for probes that cannot do
	// mutual TLS, such as Kubernetes' native gRPC probe. It tells no
	// more than whether the plugin serves.
	EnvHealthListen = "PLUGKIT_HEALTH_LISTEN"
)

// DefaultDrainTimeout bounds a service's drain after SIGTERM: below
// Kubernetes' default 30 s grace period, so that the drain ends before
// the kubelet's SIGKILL.
const DefaultDrainTimeout = 20 * time.Second

// certCheckInterval is how often, at most, a service looks at its
// certificate files again (on a TLS handshake).
const certCheckInterval = time.Second

// ErrNoTLS reports a plugin service started without its TLS material.
var ErrNoTLS = errors.New("a plugin service requires mutual TLS: set " + EnvTLSCert + " and " + EnvTLSKey +
	" (the service's certificate and key, PEM files) and " + EnvTLSClientCA +
	" (the CA that signs the hosts' client certificates); to try a plugin on one machine without TLS, listen on a loopback address (127.0.0.1:PORT) and set " +
	EnvInsecureLoopback + "=1")

// runService serves the plugin on addr for many hosts until ctx ends.
func runService(ctx context.Context, cfg Config, addr string, h Harness, logger *slog.Logger) error {
	set, err := serviceSettings(cfg, addr, h.LookupEnv, logger)
	if err != nil {
		return err
	}
	tcpLn, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("plugin: %s=%s: %w", EnvListen, addr, err)
	}
	ln := newLimitListener(tcpLn, set.limits.MaxConnections, set.limits.MaxHandshakes)
	ln.sniff, ln.plain = true, set.tls == nil // for the budget
	defer ln.Close()

	// The broker pairs one host with one plugin process; a service has
	// many hosts, so its broker is never attached: the hosts' broker
	// streams are held open and answered with nothing.
	brk, _ := brokerwire.New[*broker.Broker](brokerwire.Options{})
	defer brk.Close()
	draining := make(chan struct{})
	srv, healthSrv, err := cfg.newServer(set.version, cfg.serviceOptions(set, ln), serverParts{
		health:     func(hs *health.Server) healthpb.HealthServer { return drainingHealth{Server: hs, done: draining} },
		broker:     idleBroker{done: draining},
		controller: serviceController{logger: logger},
		brk:        brk,
	})
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var probes *service // the health listener's, if any
	if haddr, _ := h.LookupEnv(EnvHealthListen); haddr != "" {
		probes, err = serveProbes(haddr, set.limits, healthSrv, draining, logger)
		if err != nil {
			ln.closeConns(true)
			srv.Stop()
			return err
		}
		defer probes.ln.Close()
	}
	logger.Info("plugin service listening", "address", ln.Addr().String(), "version", set.version, "tls", set.tls != nil)
	if h.Handshake != nil {
		// For a test running the service in-process: where it listens.
		fmt.Fprintln(h.Handshake, ln.Addr().String())
	}
	select {
	case <-ctx.Done():
		drainService(ctx, set.drain, healthSrv, draining, logger, service{srv: srv, ln: ln}, probes)
		return nil
	case err := <-served:
		if probes != nil {
			probes.ln.closeConns(true)
			probes.srv.Stop()
		}
		if err != nil {
			return fmt.Errorf("plugin: serving: %w", err)
		}
		return nil
	}
}

// settings are a service's resolved configuration.
type settings struct {
	tls     *tls.Config // nil: plain text (loopback only)
	drain   time.Duration
	version int
	maxMsg  int
	limits  ServiceLimits
}

// serviceSettings reads a service's environment over cfg.
func serviceSettings(cfg Config, addr string, lookup func(string) (string, bool), logger *slog.Logger) (settings, error) {
	var set settings
	var err error
	if set.tls, err = serviceTLS(addr, lookup, logger); err != nil {
		return set, err
	}
	set.drain = cfg.ShutdownTimeout
	if set.drain == 0 {
		set.drain = DefaultDrainTimeout
	}
	if v, _ := lookup(EnvDrainTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return set, fmt.Errorf("plugin: %s=%q: want a positive Go duration such as 20s", EnvDrainTimeout, v)
		}
		set.drain = d
	}
	if set.version, err = serviceVersion(cfg.Versions, lookup); err != nil {
		return set, err
	}
	set.maxMsg = cfg.maxMessageSize()
	set.limits, err = cfg.Limits.resolve(lookup, set.maxMsg)
	return set, err
}

// serviceOptions are a service's server options: its limits, its
// in-flight budget over ln, the version header on health checks, TLS,
// then Config.ServerOptions.
func (cfg Config) serviceOptions(set settings, ln *limitListener) []grpc.ServerOption {
	budget := newBudget(set.limits.MaxInflightBytes, set.maxMsg)
	header := metadata.Pairs(wire.VersionHeader, strconv.Itoa(set.version))
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(set.maxMsg), grpc.MaxSendMsgSize(set.maxMsg),
		grpc.MaxHeaderListSize(maxHeaderListSize),
		grpc.ConnectionTimeout(set.limits.HandshakeTimeout),
		grpc.MaxConcurrentStreams(set.limits.MaxStreams),
		grpc.StaticStreamWindowSize(streamWindow), grpc.StaticConnWindowSize(connWindow),
		grpc.StatsHandler(connStats{ln: ln, budget: budget}),
		grpc.InTapHandle(budget.tap),
		grpc.ChainStreamInterceptor(streamBudget),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if info.FullMethod == healthpb.Health_Check_FullMethodName {
				grpc.SetHeader(ctx, header)
			}
			return h(ctx, req)
		}),
	}
	if set.tls != nil {
		opts = append(opts, grpc.Creds(sniffCreds{credentials.NewTLS(set.tls)}))
	}
	opts = append(opts, cfg.ServerOptions...)
	// Unbuffered, so that the budget's frameSniffer is never behind the
	// framer; last, so that it wins.
	return append(opts, grpc.ReadBufferSize(0))
}

// service is one of a service's servers and its listener.
type service struct {
	srv *grpc.Server
	ln  *limitListener
}

// serveProbes serves health only, in plain text, on addr (EnvHealthListen).
func serveProbes(addr string, limits ServiceLimits, hs *health.Server, draining <-chan struct{}, logger *slog.Logger) (*service, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("plugin: %s=%s: %w", EnvHealthListen, addr, err)
	}
	// Probes only: a few connections, a few small calls on each.
	ln := newLimitListener(l, healthMaxConnections, min(limits.MaxHandshakes, healthMaxConnections))
	srv := grpc.NewServer(
		grpc.MaxRecvMsgSize(healthMaxMessageSize),
		grpc.MaxHeaderListSize(healthMaxHeaderListSize),
		grpc.ConnectionTimeout(limits.HandshakeTimeout),
		grpc.MaxConcurrentStreams(healthMaxStreams),
		grpc.StatsHandler(connStats{ln: ln}),
	)
	healthpb.RegisterHealthServer(srv, drainingHealth{Server: hs, done: draining})
	go srv.Serve(ln)
	logger.Info("plugin service health listening (plain text, health only)", "address", ln.Addr().String())
	return &service{srv: srv, ln: ln}, nil
}

// drainService stops a service within drain: NOT_SERVING first, so that
// hosts watching health move their calls elsewhere; then no new
// connections, and those still in their handshake (they carry no call)
// closed; then the streams that live as long as a host (broker, health
// watches) end (close(draining)), and in-flight calls finish, until the
// deadline. probes is the health listener's server, or nil.
func drainService(ctx context.Context, drain time.Duration, hs *health.Server, draining chan struct{}, logger *slog.Logger, main service, probes *service) {
	logger.Info("plugin service draining", "reason", context.Cause(ctx), "deadline", drain.String())
	start := time.Now()
	hs.Shutdown()
	time.Sleep(watchNoticeDelay)
	close(draining)
	servers := []service{main}
	if probes != nil {
		servers = append(servers, *probes)
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		s.ln.Close()
		s.ln.closeConns(false)
		wg.Go(func() {
			stopGracefully(s.srv, hs, drain-time.Since(start), func() { s.ln.closeConns(true) })
		})
	}
	wg.Wait()
	logger.Info("plugin service stopped", "after", time.Since(start).Round(time.Millisecond).String())
}

// serviceVersion picks the app protocol version a service serves: the
// highest it speaks, or the highest it shares with
// PLUGIN_PROTOCOL_VERSIONS when that is set.
func serviceVersion(versions map[int]Register, lookup func(string) (string, bool)) (int, error) {
	best := -1
	for v := range versions {
		best = max(best, v)
	}
	s, ok := lookup(handshake.EnvProtocolVersions)
	if !ok || s == "" {
		return best, nil
	}
	want, err := handshake.ParseVersions(s)
	if err != nil {
		return 0, fmt.Errorf("plugin: %s: %w", handshake.EnvProtocolVersions, err)
	}
	mine := make([]int, 0, len(versions))
	for v := range versions {
		mine = append(mine, v)
	}
	v, err := handshake.Negotiate(mine, want)
	if err != nil {
		return 0, fmt.Errorf("plugin: %s=%s asks for no version this plugin serves: %w", handshake.EnvProtocolVersions, s, err)
	}
	return v, nil
}

// serviceTLS checks the TLS environment and returns the server
// configuration, which reloads the files when they change; nil means plain
// text (loopback with EnvInsecureLoopback only).
func serviceTLS(addr string, lookup func(string) (string, bool), logger *slog.Logger) (*tls.Config, error) {
	certFile, _ := lookup(EnvTLSCert)
	keyFile, _ := lookup(EnvTLSKey)
	caFile, _ := lookup(EnvTLSClientCA)
	insecure, _ := lookup(EnvInsecureLoopback)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("plugin: %s=%q: %v; write HOST:PORT, such as 0.0.0.0:7000", EnvListen, addr, err)
	}
	if certFile == "" && keyFile == "" && caFile == "" {
		if insecure != "1" {
			return nil, fmt.Errorf("plugin: %w", ErrNoTLS)
		}
		if !isLoopback(host) {
			return nil, fmt.Errorf("plugin: %s=1 allows plain text on a loopback address only, and %s=%s is not one: give the service its TLS material instead (%s, %s, %s)", EnvInsecureLoopback, EnvListen, addr, EnvTLSCert, EnvTLSKey, EnvTLSClientCA)
		}
		logger.Warn("plugin service without TLS, on loopback only: any local process may call it", "address", addr)
		return nil, nil
	}
	var missing []string
	for _, kv := range [][2]string{{EnvTLSCert, certFile}, {EnvTLSKey, keyFile}, {EnvTLSClientCA, caFile}} {
		if kv[1] == "" {
			missing = append(missing, kv[0])
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("plugin: %v not set: %w", missing, ErrNoTLS)
	}
	r := &certReloader{certFile: certFile, keyFile: keyFile, caFile: caFile, logger: logger}
	if err := r.load(); err != nil {
		return nil, fmt.Errorf("plugin: %w", err)
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		GetConfigForClient: r.configForClient,
	}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// certReloader serves the current contents of the certificate files: it
// reads them again, at most once a certCheckInterval, when a handshake
// comes, and switches when they changed and still make a valid set.
type certReloader struct {
	certFile, keyFile, caFile string
	logger                    *slog.Logger

	mu        sync.Mutex
	checked   time.Time
	raw       [3][]byte
	config    *tls.Config
	lastError string
}

func (r *certReloader) read() ([3][]byte, error) {
	var raw [3][]byte
	for i, f := range []string{r.certFile, r.keyFile, r.caFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			return raw, err
		}
		raw[i] = b
	}
	return raw, nil
}

func (r *certReloader) build(raw [3][]byte) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(raw[0], raw[1])
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", EnvTLSCert, EnvTLSKey, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw[2]) {
		return nil, fmt.Errorf("%s=%s holds no PEM certificate", EnvTLSClientCA, r.caFile)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		NextProtos:   []string{"h2"},
	}, nil
}

// load reads the files at start; any problem is fatal.
func (r *certReloader) load() error {
	raw, err := r.read()
	if err != nil {
		return fmt.Errorf("reading the service's TLS files: %w", err)
	}
	c, err := r.build(raw)
	if err != nil {
		return err
	}
	r.raw, r.config, r.checked = raw, c, time.Now()
	return nil
}

func (r *certReloader) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) < certCheckInterval {
		return r.config, nil
	}
	r.checked = time.Now()
	raw, err := r.read()
	if err == nil && bytes.Equal(raw[0], r.raw[0]) && bytes.Equal(raw[1], r.raw[1]) && bytes.Equal(raw[2], r.raw[2]) {
		return r.config, nil
	}
	var c *tls.Config
	if err == nil {
		c, err = r.build(raw)
	}
	if err != nil {
		// A rotation half written (the certificate new, the key still
		// old) is normal for a moment: keep serving the last good set.
		if msg := err.Error(); msg != r.lastError {
			r.lastError = msg
			r.logger.Warn("plugin service TLS files changed but do not make a valid set yet; still serving the previous certificate", "error", err)
		}
		return r.config, nil
	}
	r.raw, r.config, r.lastError = raw, c, ""
	r.logger.Info("plugin service reloaded its TLS files", "cert", r.certFile, "client_ca", r.caFile)
	return c, nil
}

// watchNoticeDelay is how long a draining service lets NOT_SERVING reach
// the hosts watching its health before it ends their watches.
const watchNoticeDelay = 100 * time.Millisecond

// drainingHealth ends health watches when the service drains: they
// would otherwise hold the graceful stop until its deadline.
type drainingHealth struct {
	*health.Server
	done <-chan struct{}
}

func (h drainingHealth) Watch(req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx, cancel := context.WithCancel(s.Context())
	defer cancel()
	go func() {
		select {
		case <-h.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := h.Server.Watch(req, ctxStream{ServerStreamingServer: s, ctx: ctx})
	if ctx.Err() != nil && s.Context().Err() == nil {
		return nil // ended by the drain
	}
	return err
}

type ctxStream struct {
	grpc.ServerStreamingServer[healthpb.HealthCheckResponse]
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

// idleBroker answers a host's broker stream and holds it open until the
// host hangs up: a service brokers no connections.
type idleBroker struct {
	pluginpb.UnimplementedGRPCBrokerServer
	done <-chan struct{} // closed when the service drains
}

func (b idleBroker) StartStream(s grpc.BidiStreamingServer[pluginpb.ConnInfo, pluginpb.ConnInfo]) error {
	select {
	case <-s.Context().Done():
	case <-b.done:
	}
	return nil
}

// serviceController ignores Shutdown: a service outlives its hosts, which
// call Shutdown when they close (go-plugin hosts do). It stops on SIGTERM.
type serviceController struct {
	pluginpb.UnimplementedGRPCControllerServer
	logger *slog.Logger
}

func (c serviceController) Shutdown(context.Context, *pluginpb.Empty) (*pluginpb.Empty, error) {
	c.logger.Debug("a host asked the plugin service to shut down; a service stops on SIGTERM only")
	return &pluginpb.Empty{}, nil
}
