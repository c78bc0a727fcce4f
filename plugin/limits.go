package plugin

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/stats"
)

// The environment that bounds what the hosts of a plugin service may hold
// of it; each overrides the ServiceLimits field of the same name.
const (
	// EnvHandshakeTimeout bounds a new connection's TLS and HTTP/2
	// handshake (a Go duration such as "10s").
	EnvHandshakeTimeout = "PLUGKIT_HANDSHAKE_TIMEOUT"
	// EnvMaxConnections caps the connections the service holds at once.
	EnvMaxConnections = "PLUGKIT_MAX_CONNECTIONS"
	// EnvMaxHandshakes caps the connections in their handshake at once;
	// a new one takes the place of the oldest that has sent nothing yet
	// (or else of the oldest).
	EnvMaxHandshakes = "PLUGKIT_MAX_HANDSHAKES"
	// EnvMaxStreams caps the concurrent calls on one connection.
	EnvMaxStreams = "PLUGKIT_MAX_STREAMS"
	// EnvMaxInflightBytes is the service-wide memory budget of the
	// requests in flight (an integer number of bytes).
	EnvMaxInflightBytes = "PLUGKIT_MAX_INFLIGHT_BYTES"
)

// Defaults of ServiceLimits.
const (
	// DefaultHandshakeTimeout bounds a connection's handshake: a client
	// that connects and sends nothing is dropped after it.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultMaxConnections caps a service's connections: one or a few
	// per host, for hundreds of hosts.
	DefaultMaxConnections = 1024
	// DefaultMaxHandshakes caps the connections in their handshake; a new
	// one takes the place of the oldest that has sent nothing yet (or
	// else of the oldest), so that idle connections never keep a host
	// waiting.
	DefaultMaxHandshakes = 128
	// DefaultMaxStreams caps the concurrent calls of one connection; a
	// gRPC client queues the calls above it.
	DefaultMaxStreams = 128
	// DefaultMaxInflightBytes is the default memory budget of requests
	// in flight: 256 MiB, or three times Config.MaxMessageSize when that
	// is more (see ServiceLimits.MaxInflightBytes).
	DefaultMaxInflightBytes = 256 << 20
)

// The flow-control windows of a service's connections: what a client may
// send on a stream before the handler reads it (a call waiting for room in
// the in-flight budget holds no more), and on a connection before gRPC
// takes it in. gRPC's dynamic windows would grow up to 16 MiB a stream.
const (
	streamWindow = 1 << 20
	connWindow   = 8 << 20
)

// The health port (EnvHealthListen) serves probes: a few connections, one
// small call each.
const (
	healthMaxConnections    = 64
	healthMaxStreams        = 8
	healthMaxMessageSize    = 4 << 10
	healthMaxHeaderListSize = 8 << 10
)

// maxHeaderListSize bounds a call's headers on a service's port, as HTTP/2
// counts them (name, value and 32 bytes per field; gRPC's own default is
// 16 MiB): gRPC Java's and C core's bound. gRPC decodes a connection's
// headers one call at a time, and refuses a call whose headers are larger
// (RST_STREAM) without keeping them; those it keeps, it keeps for the
// call's life, and they count against the in-flight budget. So headers
// take at most the budget plus, while decoded, MaxConnections times this
// twice (32 MiB by default).
const maxHeaderListSize = 16 << 10

// ServiceLimits bounds what the hosts of a plugin service (EnvListen) may
// hold of it, so that a flood of connections, calls or bytes is refused
// instead of exhausting the process. The zero value means the defaults;
// the PLUGKIT_* variables named on each field override it.
type ServiceLimits struct {
	// HandshakeTimeout bounds each connection's TLS and HTTP/2 handshake,
	// on the service's port and on its health port
	// (EnvHandshakeTimeout); 0 means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// MaxConnections caps the connections held at once; the service
	// accepts no more until one closes (EnvMaxConnections); 0 means
	// DefaultMaxConnections.
	MaxConnections int
	// MaxHandshakes caps the connections in their handshake at once
	// (EnvMaxHandshakes): a new connection beyond it takes the place of
	// the oldest that has sent nothing yet, or else of the oldest; 0
	// means DefaultMaxHandshakes.
	MaxHandshakes int
	// MaxStreams caps the concurrent calls on one connection, streams
	// included (EnvMaxStreams); 0 means DefaultMaxStreams.
	MaxStreams uint32
	// MaxInflightBytes is the memory budget of the requests the service
	// holds at once, over all calls (EnvMaxInflightBytes). Reading a
	// request message takes room for three times its size (gRPC holds a
	// message up to three times while it reads and decodes it; the size
	// is read from the message's gRPC prefix as it arrives, before gRPC
	// reads the message), until it is decoded; from then on the message
	// counts its own size, until its call ends or, on a client stream,
	// asks for the next message. A call waits for room before its message
	// is read, first come first served, for as long as its deadline
	// allows; only a flow-control window (1 MiB) of it is received
	// meanwhile, and a call waiting for its client's next message holds
	// no room. A gzip message takes its size plus twice what it can
	// decode to (at most 1032 times its size, deflate's bound, and at most
	// the maximum message size); a message of another compression, its
	// size plus twice the maximum message size. A call's headers (at most
	// 16 KiB, as HTTP/2 counts them) take twice their size for the call's
	// whole life. One connection's calls hold at most a quarter of the
	// budget (or the room one message takes, when that is more); its
	// other calls wait. Under grpc.Creds of Config.ServerOptions the sizes
	// are unknown: each message takes room for the largest (three times
	// the maximum message size) while it is read or, on a client stream,
	// awaited, and a connection holds at most that plus a quarter of the
	// budget (at most the whole budget); then give the budget at least
	// four times the maximum message size (the default does), or the
	// headers a host's health watch holds leave no room for its other
	// calls. When the requests in flight and those waiting take the whole
	// budget, or the connection's share, new calls are refused with
	// codes.ResourceExhausted. 0 means DefaultMaxInflightBytes; it must be
	// at least three times the maximum message size, so that any message
	// can be read.
	MaxInflightBytes int64
}

// resolve applies the environment and the defaults.
func (l ServiceLimits) resolve(lookup func(string) (string, bool), maxMsg int) (ServiceLimits, error) {
	if v, _ := lookup(EnvHandshakeTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return l, fmt.Errorf("plugin: %s=%q: want a positive Go duration such as 10s", EnvHandshakeTimeout, v)
		}
		l.HandshakeTimeout = d
	}
	for _, f := range []struct {
		env string
		set func(int64)
	}{
		{EnvMaxConnections, func(n int64) { l.MaxConnections = int(n) }},
		{EnvMaxHandshakes, func(n int64) { l.MaxHandshakes = int(n) }},
		{EnvMaxStreams, func(n int64) { l.MaxStreams = uint32(n) }},
		{EnvMaxInflightBytes, func(n int64) { l.MaxInflightBytes = n }},
	} {
		v, _ := lookup(f.env)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || (f.env != EnvMaxInflightBytes && n > 1<<31-1) {
			return l, fmt.Errorf("plugin: %s=%q: want a positive integer", f.env, v)
		}
		f.set(n)
	}
	if l.HandshakeTimeout <= 0 {
		l.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.MaxHandshakes <= 0 {
		l.MaxHandshakes = DefaultMaxHandshakes
	}
	if l.MaxStreams == 0 {
		l.MaxStreams = DefaultMaxStreams
	}
	if l.MaxInflightBytes <= 0 {
		l.MaxInflightBytes = max(DefaultMaxInflightBytes, readCopies*int64(maxMsg))
	}
	if l.MaxInflightBytes < readCopies*int64(maxMsg) {
		return l, fmt.Errorf("plugin: the in-flight request budget (%s, ServiceLimits.MaxInflightBytes) is %d bytes, below three times the maximum message size (%d bytes), the room reading one message takes: raise it or lower Config.MaxMessageSize", EnvMaxInflightBytes, l.MaxInflightBytes, maxMsg)
	}
	return l, nil
}

// limitListener caps the connections a server holds and those in their
// handshake, and can close them: the
// ones still in their handshake when a drain starts (they carry no call),
// all of them when the drain's deadline passes. A gRPC server waits, in
// Stop and GracefulStop, for every connection's handshake to end.
//
// Accept never waits for a handshake to end: when the connections in
// their handshake are at the cap, a new one takes the place of the oldest
// that has sent nothing yet (nothing read, nothing waiting to be read),
// or else of the oldest. A flood of idle
// connections (Slowloris) thus holds no more than the cap, for no longer
// than it takes the cap's worth of newer connections to come, and never
// stands between a host and the service: a host sends its first bytes at
// once, and all the idle ones are older. (A per-address bound would not
// help: behind a NAT or a proxy, or on loopback, every client shares one
// address.)
//
// A connection's handshake ends when the server's stats handler
// (connStats) sees it begin serving.
type limitListener struct {
	net.Listener
	sniff         bool // follow each client's frames (frameSniffer)
	plain         bool // and no TLS: here, not in sniffCreds
	maxHandshakes int
	slots         chan struct{} // one token per connection held
	done          chan struct{}
	closeOnce     sync.Once

	mu      sync.Mutex
	conns   map[string]*limitConn
	pending []*limitConn // the connections in their handshake, oldest first
}

func newLimitListener(ln net.Listener, maxConns, maxHandshakes int) *limitListener {
	return &limitListener{
		Listener:      ln,
		maxHandshakes: maxHandshakes,
		slots:         make(chan struct{}, maxConns),
		done:          make(chan struct{}),
		conns:         make(map[string]*limitConn),
	}
}

func connKey(remote, local net.Addr) string {
	return remote.String() + " " + local.String()
}

// Accept waits for a connection slot, then for a connection, and makes
// room for its handshake.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	lc := &limitConn{Conn: c, l: l, key: connKey(c.RemoteAddr(), c.LocalAddr()), handshaking: true}
	if l.sniff {
		lc.sniffer, lc.plain = newFrameSniffer(), l.plain
	}
	var evicted *limitConn
	l.mu.Lock()
	if len(l.pending) >= l.maxHandshakes {
		evicted = l.pending[0]
		for _, p := range l.pending {
			if p.heard.Load() {
				continue
			}
			if hasSent(p.Conn) {
				p.heard.Store(true)
				continue
			}
			evicted = p
			break
		}
		evicted.dropPendingLocked()
	}
	l.conns[lc.key] = lc
	l.pending = append(l.pending, lc)
	l.mu.Unlock()
	if evicted != nil {
		evicted.Close()
	}
	return lc, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// handshakeDone ends the handshake of the connection named by key, and
// returns the connection.
func (l *limitListener) handshakeDone(key string) *limitConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.conns[key]
	if c != nil {
		c.dropPendingLocked()
	}
	return c
}

// closeConns closes the connections still in their handshake, or all.
func (l *limitListener) closeConns(all bool) {
	l.mu.Lock()
	var cs []*limitConn
	for _, c := range l.conns {
		if all || c.handshaking {
			cs = append(cs, c)
		}
	}
	l.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

type limitConn struct {
	net.Conn
	l           *limitListener
	key         string
	handshaking bool        // guarded by l.mu
	heard       atomic.Bool // the client sent a byte
	closeOnce   sync.Once
	// sniffer follows the client's HTTP/2 frames: here, on a plain-text
	// connection; on a TLS one, in the connection sniffCreds returns.
	sniffer *frameSniffer
	plain   bool
}

func (c *limitConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.heard.Load() {
		c.heard.Store(true)
	}
	if c.plain {
		c.sniffer.read(p[:n])
	}
	return n, err
}

// dropPendingLocked ends c's handshake in its listener, whose mu is held.
func (c *limitConn) dropPendingLocked() {
	if !c.handshaking {
		return
	}
	c.handshaking = false
	c.l.pending = slices.DeleteFunc(c.l.pending, func(p *limitConn) bool { return p == c })
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		c.l.mu.Lock()
		if c.l.conns[c.key] == c {
			delete(c.l.conns, c.key)
		}
		c.dropPendingLocked()
		c.l.mu.Unlock()
		<-c.l.slots
	})
	return err
}

// connStats is a server's stats handler: it ends a connection's
// handshake in its limitListener and, on the service's port, keeps the
// in-flight budget's accounts.
type connStats struct {
	ln     *limitListener
	budget *budget // nil on the health port
}

func (h connStats) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	// The connection's streams' contexts derive from this one.
	sized := false
	if c := h.ln.handshakeDone(connKey(info.RemoteAddr, info.LocalAddr)); c != nil && c.sniffer != nil {
		ctx = context.WithValue(ctx, snifferKey{}, c.sniffer)
		// gRPC read the client preface before it tags the connection.
		sized = c.sniffer.following()
	}
	if h.budget != nil {
		ctx = context.WithValue(ctx, shareKey{}, h.budget.newShare(sized))
	}
	return ctx
}

func (connStats) HandleConn(context.Context, stats.ConnStats) {}

func (connStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (h connStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if h.budget == nil {
		return
	}
	// Only these events touch the budget: the others (OutHeader,
	// OutTrailer, End) skip looking for the call's account.
	switch s := s.(type) {
	case *stats.InHeader:
		// Before Begin, in the call's goroutine.
		if cb := callBudgetOf(ctx); cb != nil {
			cb.takeHeader(ctx, s.Compression)
		}
	case *stats.Begin:
		cb := callBudgetOf(ctx)
		if cb == nil {
			return
		}
		cb.unary = !s.IsClientStream && !s.IsServerStream
		// A call that is not client-streaming reads its one request
		// message right after this, in this goroutine: wait for room.
		if !s.IsClientStream {
			cb.reserveNext(ctx)
		}
	case *stats.OutPayload:
		if cb := callBudgetOf(ctx); cb != nil {
			cb.settleUnary()
		}
	case *stats.InPayload:
		if cb := callBudgetOf(ctx); cb != nil {
			cb.received(int64(max(s.Length, s.CompressedLength)))
		}
	}
}

// callBudgetOf is the account of the call of ctx, or nil.
func callBudgetOf(ctx context.Context) *callBudget {
	cb, _ := ctx.Value(callBudgetKey{}).(*callBudget)
	return cb
}
