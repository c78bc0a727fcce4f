package host

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/health" // client-side health checking, named in the service config
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/hostwire"
	"github.com/plugkit/plugkit/wire"
)

// The balancing policies Remote.Balancing names: gRPC's own load
// balancers.
const (
	roundRobin = "round_robin"
	pickFirst  = "pick_first"
)

// defaultReconnectMaxDelay caps the backoff between reconnection attempts
// to a lost endpoint.
const defaultReconnectMaxDelay = 5 * time.Second

// Remote names a plugin that runs as a network service (a plugin started
// with PLUGKIT_LISTEN): one or more endpoints serving the same plugin.
type Remote struct {
	// Endpoints are HOST:PORT addresses of the plugin's replicas. The
	// connection spreads calls over those that are up and pass their
	// health check, and fails over when one goes.
	Endpoints []string
	// Balancing is gRPC's load balancing policy: "round_robin" (empty)
	// spreads calls over every healthy endpoint; "pick_first" sends every
	// call to the first healthy endpoint and fails over to the next when
	// it goes.
	Balancing string
	// ReconnectMaxDelay caps the backoff between attempts to reach a
	// lost endpoint again; 0 means 5 seconds.
	ReconnectMaxDelay time.Duration
}

func (r Remote) check() error {
	if len(r.Endpoints) == 0 {
		return errors.New("host: Remote.Endpoints is empty: name at least one HOST:PORT of the plugin service")
	}
	for _, e := range r.Endpoints {
		if _, port, err := net.SplitHostPort(e); err != nil || port == "" {
			return fmt.Errorf("host: endpoint %q: write it as HOST:PORT (10.0.0.5:7000, plugin.ns.svc:7000)", e)
		}
	}
	if r.Balancing != "" && r.Balancing != roundRobin && r.Balancing != pickFirst {
		return fmt.Errorf("host: Remote.Balancing %q: want %q or %q", r.Balancing, roundRobin, pickFirst)
	}
	return nil
}

func (r Remote) loopbackOnly() bool {
	for _, e := range r.Endpoints {
		h, _, _ := net.SplitHostPort(e)
		if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return false
		}
	}
	return true
}

// EndpointError reports a call that failed because the connection to a
// plugin service's endpoint was lost or could not be made. Calls fail at
// once with it (they never wait for an endpoint to come back), while the
// connection reconnects in the background with backoff. It carries the
// gRPC status of the failure (status.Code gives codes.Unavailable).
type EndpointError struct {
	// Plugin is the plugin's name (Options.Name).
	Plugin string
	// Endpoint is the endpoint the call was on or failed to reach; when
	// gRPC did not say which, it lists every endpoint.
	Endpoint string
	// Err is the gRPC error.
	Err error
}

// Error names the plugin and the endpoint.
func (e *EndpointError) Error() string {
	return fmt.Sprintf("plugin %s: endpoint %s unreachable: %v", e.Plugin, e.Endpoint, status.Convert(e.Err).Message())
}

// Unwrap returns the gRPC error.
func (e *EndpointError) Unwrap() error { return e.Err }

// GRPCStatus keeps the gRPC code, so that status.Code and status.FromError
// see through the error.
func (e *EndpointError) GRPCStatus() *status.Status {
	return status.New(status.Code(e.Err), e.Error())
}

// Dial connects to a plugin that runs as a network service and returns
// the same *Client that Start and Reattach return: generated stubs take
// Conn(), Ping and Close work as usual.
//
// opts.Security must be host.TLS: set Certificates to the host's client
// certificate (the service refuses hosts without one), RootCAs to the CA
// of the service's certificate, and leave ServerName empty to check each
// endpoint's own name, or set it when the certificates name a service
// rather than addresses. host.Plaintext() is allowed only when every
// endpoint is a loopback address; the zero value (AutoMTLS, which a
// service cannot do) is refused.
//
// The endpoints are balanced and failed over by gRPC itself (a static
// resolver and the round_robin or pick_first balancer, with gRPC's health
// checking of the wire.HealthService service): an endpoint that stops answering or
// reports NOT_SERVING gets no calls until it is healthy again. Dial waits
// until one endpoint is healthy, within ctx, or 30 seconds when
// ctx has no deadline. Close disconnects and never asks the service to stop: other
// hosts use it. The broker's stream is opened as with a launched plugin,
// but a service brokers no connections.
func Dial(ctx context.Context, r Remote, opts Options) (*Client, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	switch {
	case opts.Security.mode == modeTLS:
	case opts.Security.mode == modePlaintext && r.loopbackOnly():
	case opts.Security.mode == modePlaintext:
		return nil, fmt.Errorf("host: plain text to a plugin service is allowed on loopback only, and %v are not all loopback addresses: set Options.Security to host.TLS (the host's certificate and the service's CA)", r.Endpoints)
	default:
		return nil, errors.New("host: Dial needs Options.Security set to host.TLS(cfg) (the host's client certificate in Certificates, the service's CA in RootCAs): a plugin service requires mutual TLS; for a loopback service without TLS set host.Plaintext()")
	}
	c := newClient(opts, cmp.Or(opts.Name, strings.Join(r.Endpoints, ",")))
	c.life = service{}
	c.endpoints = slices.Clone(r.Endpoints)
	c.line = handshake.Line{
		CoreVersion: handshake.CoreVersion,
		Network:     "tcp",
		Address:     strings.Join(r.Endpoints, ","),
		Protocol:    handshake.ProtocolGRPC,
	}
	if err := c.dialRemote(ctx, r, opts.Security.ownTLS()); err != nil {
		return nil, &StartError{Name: c.name, Err: err}
	}
	c.ready = time.Since(c.started)
	return c, nil
}

func (c *Client) dialRemote(ctx context.Context, r Remote, tlsConfig *tls.Config) error {
	maxMsg := cmp.Or(c.opts.MaxMessageSize, wire.DefaultMaxMessageSize)
	conn, err := grpc.NewClient("plugkit-remote:///"+c.name, c.remoteDialOptions(r, tlsConfig, maxMsg)...)
	if err != nil {
		return fmt.Errorf("connecting to %v: %w", r.Endpoints, err)
	}
	c.conn = conn
	c.tls = tlsConfig != nil
	v, err := c.firstHealthCheck(ctx, r)
	if err != nil {
		conn.Close()
		return err
	}
	if !slices.Contains(c.opts.Versions, v) {
		conn.Close()
		return &handshake.VersionError{Plugin: []int{v}, Host: c.opts.Versions}
	}
	c.line.AppVersion = v
	_, err = c.startBroker(tlsConfig, maxMsg, false)
	return err
}

// remoteDialOptions are the gRPC options of a plugin service's
// connection: the endpoints as a static resolver's addresses, the
// balancer, gRPC's health checking, the backoff and the host's own.
func (c *Client) remoteDialOptions(r Remote, tlsConfig *tls.Config, maxMsg int) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if tlsConfig != nil {
		creds = credentials.NewTLS(tlsConfig)
	}
	policy := cmp.Or(r.Balancing, roundRobin)
	res := manual.NewBuilderWithScheme("plugkit-remote")
	addrs := make([]resolver.Address, len(r.Endpoints))
	for i, e := range r.Endpoints {
		addrs[i] = resolver.Address{Addr: e}
		if tlsConfig != nil && tlsConfig.ServerName == "" {
			host, _, _ := net.SplitHostPort(e)
			addrs[i].ServerName = host
		}
	}
	res.InitialState(resolver.State{Addresses: addrs})
	serviceConfig := fmt.Sprintf(`{"loadBalancingConfig":[{%q:{}}],"healthCheckConfig":{"serviceName":%q}}`, policy, wire.HealthService)
	bc := backoff.DefaultConfig
	bc.BaseDelay = 100 * time.Millisecond
	bc.MaxDelay = cmp.Or(r.ReconnectMaxDelay, defaultReconnectMaxDelay)
	return append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithResolvers(res),
		grpc.WithDefaultServiceConfig(serviceConfig),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bc, MinConnectTimeout: 5 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)),
		grpc.WithChainUnaryInterceptor(c.unaryEndpointError),
		grpc.WithChainStreamInterceptor(c.streamEndpointError),
	}, slices.Concat(c.opts.Telemetry.dialOptions(c.name, c.rep.binary), c.opts.DialOptions)...)
}

// firstHealthCheck waits for a healthy endpoint and learns the version
// the service serves from its answer's header.
func (c *Client) firstHealthCheck(ctx context.Context, r Remote) (int, error) {
	hctx := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, hostwire.DefaultStartTimeout)
		defer cancel()
	}
	var md metadata.MD
	var resp *healthpb.HealthCheckResponse
	var err, lastErr error
	for {
		// Not WaitForReady: a failing endpoint answers at once with why
		// (refused, TLS), which the error then says.
		resp, err = healthpb.NewHealthClient(c.conn).Check(hctx, &healthpb.HealthCheckRequest{Service: wire.HealthService}, grpc.Header(&md))
		if err == nil || status.Code(err) != codes.Unavailable {
			break
		}
		lastErr = err
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-t.C:
			continue
		case <-hctx.Done():
			t.Stop()
		}
		break
	}
	if err != nil && lastErr != nil {
		err = lastErr
	}
	var ee *EndpointError
	if errors.As(err, &ee) {
		err = ee.Err
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("no endpoint of %v answered its health check: %w; check that the service runs (PLUGKIT_LISTEN), the addresses, and the TLS material of both sides (the host's certificate must be signed by the service's PLUGKIT_TLS_CLIENT_CA, the service's by the RootCAs of host.TLS)", r.Endpoints, err)
	case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		return 0, fmt.Errorf("%w (status %s)", ErrNotServing, resp.GetStatus())
	}
	vs := md.Get(wire.VersionHeader)
	if len(vs) == 0 {
		return 0, fmt.Errorf("the service at %v did not name its app protocol version (header %s): it is not a plugkit plugin service (started with PLUGKIT_LISTEN)", r.Endpoints, wire.VersionHeader)
	}
	v, err := strconv.Atoi(vs[0])
	if err != nil {
		return 0, fmt.Errorf("the service at %v names app protocol version %q, not a number", r.Endpoints, vs[0])
	}
	return v, nil
}

// Endpoints are the endpoints of a plugin service (Dial); nil for a
// launched or reattached plugin.
func (c *Client) Endpoints() []string { return slices.Clone(c.endpoints) }

// endpointError turns a lost or failed connection into an *EndpointError.
func (c *Client) endpointError(err error, p *peer.Peer) error {
	if err == nil || status.Code(err) != codes.Unavailable {
		return err
	}
	var ee *EndpointError
	if errors.As(err, &ee) {
		return err
	}
	endpoint := ""
	if p != nil && p.Addr != nil {
		endpoint = p.Addr.String()
	} else {
		msg := status.Convert(err).Message()
		for _, e := range c.endpoints {
			if strings.Contains(msg, e) {
				endpoint = e
				break
			}
		}
	}
	if endpoint == "" {
		endpoint = strings.Join(c.endpoints, ",")
	}
	return &EndpointError{Plugin: c.name, Endpoint: endpoint, Err: err}
}

func (c *Client) unaryEndpointError(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var p peer.Peer
	err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Peer(&p))...)
	if err == nil {
		return nil
	}
	return c.endpointError(err, &p)
}

func (c *Client) streamEndpointError(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	p := new(peer.Peer)
	s, err := streamer(ctx, desc, cc, method, append(opts, grpc.Peer(p))...)
	if err != nil {
		return nil, c.endpointError(err, p)
	}
	return &endpointStream{ClientStream: s, c: c, p: p}, nil
}

type endpointStream struct {
	grpc.ClientStream
	c *Client
	p *peer.Peer
}

func (s *endpointStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		return nil
	}
	return s.c.endpointError(err, s.p)
}
