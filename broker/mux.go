package broker

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// ErrMuxEnded is returned, when the host asked for multiplexing, by the
// Accept of a listener from Broker.Accept once the connection under it
// has ended: the peer hung up or the plugin connection was closed.
var ErrMuxEnded = errors.New("broker: the multiplexed connection has ended (the peer hung up)")

// muxAcceptTimeout bounds how long a plugin's multiplexer waits for its host
// to connect, once the handshake is out.
const muxAcceptTimeout = 30 * time.Second

// MaxStreams bounds, on a multiplexed connection, the streams of the peer
// this side hands out at once (to the main gRPC server and to brokered
// listeners), each a gRPC server
// connection with its buffers and goroutines. Past it, the peer's new
// streams wait in yamux's accept backlog (256) until one of those closes,
// and yamux resets the streams beyond the backlog: a peer that opens
// streams by the thousand costs this side a bounded amount.
const MaxStreams = 128

// knockWait bounds how long a knock for a service this side does not serve
// yet waits for Serve or Accept before it is refused. It is well inside
// go-plugin's 5 s wait for the answer, so a refusal always arrives in time.
const knockWait = 2 * time.Second

// multiplexer is one end of a plugin connection that carries the main gRPC
// connection and every brokered one over a single socket, as go-plugin
// does when its host sets GRPCBrokerMultiplex (PLUGIN_MULTIPLEX_GRPC=true).
//
// The socket carries a yamux session: the host is its client, the plugin
// its server. Each gRPC connection is one yamux stream, with TLS (AutoMTLS
// or a team's own) on top of the stream as usual. A stream the host opens
// without knocking first is the host's main connection. A brokered
// connection is announced by a knock on the broker stream: the dialing
// side sends {service_id, knock}, the accepting side answers
// {service_id, knock, ack} once a listener for that ID exists, and the
// dialer opens the next stream, which the accepting side hands to that
// listener. Each side dials one brokered connection at a time, so streams
// and knocks pair up in order.
//
// plugin.Run and host.Start make one (brokerwire.ListenMux, DialMux) and
// give it to their broker when the host asks for multiplexing.
type multiplexer struct {
	ready   chan struct{} // closed once sess or err is set
	sess    *yamux.Session
	err     error
	closed  chan struct{}
	once    sync.Once
	rawLn   net.Listener // plugin side: the socket listener, closed after the first connection
	mainLn  *muxListener // plugin side: unknocked streams; nil on the host side
	mu      sync.Mutex
	expect  []uint32 // IDs knocked and acknowledged, oldest first
	byID    map[uint32]*muxListener
	waiting []admission           // the peer's knocks waiting for a listener, oldest (first due) first
	expiry  *time.Timer           // refuses the due knocks of waiting; armed while waiting is not empty
	slots   chan struct{}         // one per stream of the peer handed out and not yet closed
	live    map[net.Conn]struct{} // the streams handed out (the peer's and this side's) not yet closed
}

// admission is a knock of the peer waiting for its listener. The one who
// takes it out of Mux.waiting calls answer: listen, the expiry timer or
// Close.
type admission struct {
	id     uint32
	due    time.Time
	answer func(refusal string)
}

func newMultiplexer() *multiplexer {
	return &multiplexer{
		ready:  make(chan struct{}),
		slots:  make(chan struct{}, MaxStreams),
		closed: make(chan struct{}),
		byID:   make(map[uint32]*muxListener),
		live:   make(map[net.Conn]struct{}),
	}
}

func muxConfig() *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	return cfg
}

// listenMux is the plugin's side: it takes the first connection on ln (the
// host's), makes it a yamux session, and routes the host's streams. ln
// takes no further connections: it is closed once the host is connected,
// which removes a unix socket's file. The
// plugin's gRPC server serves on Main. If the host does not connect within
// muxAcceptTimeout, Main's Accept fails.
func listenMux(ln net.Listener) *multiplexer {
	m := newMultiplexer()
	m.rawLn = ln
	m.mainLn = m.newListener(0, ln.Addr())
	// yamux's default configuration reads os.Stderr, which a plugin
	// redirects right after its handshake: take it now, before that.
	go m.acceptHost(ln, muxConfig())
	return m
}

func (m *multiplexer) acceptHost(ln net.Listener, cfg *yamux.Config) {
	type result struct {
		conn net.Conn
		err  error
	}
	first := make(chan result, 1)
	go func() {
		conn, err := ln.Accept()
		first <- result{conn, err}
	}()
	var r result
	t := time.NewTimer(muxAcceptTimeout)
	defer t.Stop()
	select {
	case r = <-first:
	case <-t.C:
		r.err = fmt.Errorf("broker: the host did not connect within %v of the handshake", muxAcceptTimeout)
	case <-m.closed:
		r.err = ErrMuxEnded
	}
	// The socket has served its purpose: nobody else may connect, and
	// closing it removes its file.
	ln.Close()
	if r.err != nil {
		if r.conn != nil {
			r.conn.Close()
		}
		m.start(nil, r.err)
		return
	}
	sess, err := yamux.Server(&endingConn{Conn: r.conn, ended: m.releaseStreams}, cfg)
	if err != nil {
		r.conn.Close()
	}
	m.start(sess, err)
}

// dialMuxConn is the host's side: conn is its one connection to the plugin's
// socket. Open makes the main gRPC connection's streams.
func dialMuxConn(conn net.Conn) (*multiplexer, error) {
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetKeepAlive(true)
	}
	m := newMultiplexer()
	sess, err := yamux.Client(&endingConn{Conn: conn, ended: m.releaseStreams}, muxConfig())
	if err != nil {
		return nil, fmt.Errorf("broker: starting the multiplexed session: %w", err)
	}
	m.start(sess, nil)
	return m, nil
}

func (m *multiplexer) start(sess *yamux.Session, err error) {
	m.sess, m.err = sess, err
	close(m.ready)
	if err != nil {
		m.Close()
		return
	}
	go m.route()
}

// session waits for the session to be established.
func (m *multiplexer) session() (*yamux.Session, error) {
	select {
	case <-m.ready:
	case <-m.closed:
		return nil, ErrMuxEnded
	}
	if m.err != nil {
		return nil, m.err
	}
	return m.sess, nil
}

// route hands each stream the peer opens to the listener it was knocked
// for, or to the main listener.
func (m *multiplexer) route() {
	for {
		select {
		case m.slots <- struct{}{}:
		case <-m.closed:
			return
		}
		stream, err := m.sess.Accept()
		if err != nil {
			<-m.slots
			m.Close()
			return
		}
		conn := &slotConn{Conn: stream, free: func() {
			m.streamClosed(stream)
			<-m.slots
		}}
		m.mu.Lock()
		m.live[stream] = struct{}{}
		var ln *muxListener
		if len(m.expect) > 0 {
			id := m.expect[0]
			m.expect = m.expect[1:]
			ln = m.byID[id]
		} else {
			ln = m.mainLn
		}
		m.mu.Unlock()
		if ln == nil || !ln.deliver(conn) {
			conn.Close() // knocked for a listener closed since, or the host has no main listener
		}
	}
}

// Open opens a new stream to the peer. The host's gRPC dialer uses it for
// the main connection; Broker.Dial knocks before it opens one.
func (m *multiplexer) Open() (net.Conn, error) {
	sess, err := m.session()
	if err != nil {
		return nil, err
	}
	stream, err := sess.Open()
	if err != nil {
		return nil, fmt.Errorf("broker: opening a multiplexed stream: %w", err)
	}
	m.mu.Lock()
	m.live[stream] = struct{}{}
	m.mu.Unlock()
	return &slotConn{Conn: stream, free: func() { m.streamClosed(stream) }}, nil
}

// streamClosed drops a closed stream from the live ones.
func (m *multiplexer) streamClosed(stream net.Conn) {
	m.mu.Lock()
	delete(m.live, stream)
	m.mu.Unlock()
}

// releaseStreams ends the waits of every live stream, before the session
// learns that its connection failed or is closed by Close. yamux v0.1.2
// wakes a Stream.Read or Write waiting when the session shuts down, and
// the woken wait goes round its loop, never blocking, until the session
// has closed the stream: on another thread, soon; in a WebAssembly
// guest, whose one thread Go never preempts, never, so that the guest
// spun until its host stopped it (TestCloseEndsGuestByItsOwnStop in
// wasmhost). A deadline in the past makes each such wait return
// ErrTimeout at once; what a stream received already is still read first.
func (m *multiplexer) releaseStreams() {
	past := time.Unix(1, 0)
	m.mu.Lock()
	defer m.mu.Unlock()
	for stream := range m.live {
		stream.SetReadDeadline(past)
		stream.SetWriteDeadline(past)
	}
}

// endingConn is the session's connection: its first failure releases the
// streams' waits (releaseStreams) before yamux sees it.
type endingConn struct {
	net.Conn
	once  sync.Once
	ended func()
}

func (c *endingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.once.Do(c.ended)
	}
	return n, err
}

func (c *endingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil {
		c.once.Do(c.ended)
	}
	return n, err
}

// Main is the listener of the plugin's main gRPC server: it accepts the
// streams the host opens without a knock. It is nil on the host's side.
// Closing it does not end the session (a graceful stop keeps answering
// calls in flight); Close does.
func (m *multiplexer) Main() net.Listener {
	if m.mainLn == nil {
		return nil
	}
	return m.mainLn
}

// Close ends the session and every stream in it. It is safe to call more
// than once.
func (m *multiplexer) Close() error {
	m.once.Do(func() {
		m.mu.Lock()
		close(m.closed)
		waiting := m.waiting
		m.waiting = nil
		if m.expiry != nil {
			m.expiry.Stop()
		}
		m.mu.Unlock()
		for _, a := range waiting {
			a.answer(ErrMuxEnded.Error())
		}
		if m.rawLn != nil {
			m.rawLn.Close()
		}
		select {
		case <-m.ready:
			if m.sess != nil {
				m.releaseStreams()
				m.sess.Close()
			}
		default:
		}
	})
	return nil
}

// Done is closed when the session has ended.
func (m *multiplexer) Done() <-chan struct{} { return m.closed }

// listen registers the listener of brokered service id.
func (m *multiplexer) listen(id uint32) (net.Listener, error) {
	if _, err := m.session(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if _, ok := m.byID[id]; ok {
		m.mu.Unlock()
		return nil, fmt.Errorf("broker: service %d is already served on this connection; take a new ID from NextID", id)
	}
	ln := m.newListener(id, m.sess.Addr())
	m.byID[id] = ln
	var admitted []admission
	m.waiting = slices.DeleteFunc(m.waiting, func(a admission) bool {
		if a.id == id {
			admitted = append(admitted, a)
			return true
		}
		return false
	})
	m.mu.Unlock()
	for _, a := range admitted {
		a.answer("")
	}
	return ln, nil
}

// admit calls answer, for a knock of the peer for id, once a listener of
// id exists (with "") or after knockWait without one (with the refusal to
// send back). It does not block, and the wait holds no goroutine: the
// knocks waiting share one timer.
func (m *multiplexer) admit(id uint32, answer func(refusal string)) {
	m.mu.Lock()
	if _, ok := m.byID[id]; ok {
		m.mu.Unlock()
		answer("")
		return
	}
	select {
	case <-m.closed:
		m.mu.Unlock()
		answer(ErrMuxEnded.Error())
		return
	default:
	}
	// Every knock waits knockWait, so waiting stays in due order.
	m.waiting = append(m.waiting, admission{id: id, due: time.Now().Add(knockWait), answer: answer})
	if len(m.waiting) == 1 {
		if m.expiry == nil {
			m.expiry = time.AfterFunc(knockWait, m.expire)
		} else {
			m.expiry.Reset(knockWait)
		}
	}
	m.mu.Unlock()
}

// expire refuses the knocks whose knockWait is over, and arms the timer
// for the next one due.
func (m *multiplexer) expire() {
	now := time.Now()
	m.mu.Lock()
	n := 0
	for n < len(m.waiting) && !m.waiting[n].due.After(now) {
		n++
	}
	due := slices.Clone(m.waiting[:n])
	m.waiting = slices.Delete(m.waiting, 0, n)
	if len(m.waiting) > 0 {
		m.expiry.Reset(m.waiting[0].due.Sub(now))
	}
	m.mu.Unlock()
	for _, a := range due {
		a.answer(fmt.Sprintf("no service %d is served on this side of the connection (the serving side must call Serve or Accept before the ID is dialed)", a.id))
	}
}

// expectNext queues id: the next stream the peer opens that is not yet
// spoken for goes to id's listener.
func (m *multiplexer) expectNext(id uint32) {
	m.mu.Lock()
	m.expect = append(m.expect, id)
	m.mu.Unlock()
}

func (m *multiplexer) forget(ln *muxListener) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID[ln.id] == ln {
		delete(m.byID, ln.id)
	}
}

func (m *multiplexer) newListener(id uint32, addr net.Addr) *muxListener {
	return &muxListener{mux: m, id: id, addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// muxListener accepts the streams routed to one gRPC server.
type muxListener struct {
	mux    *multiplexer
	id     uint32 // 0 for the main listener
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *muxListener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.closed:
		return false
	case <-l.mux.closed:
		return false
	}
}

// Accept returns the next stream routed here.
func (l *muxListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-l.mux.closed:
		select {
		case <-l.mux.ready: // m.err is set before ready is closed
			if l.mux.err != nil && l.id == 0 {
				return nil, l.mux.err
			}
		default:
		}
		return nil, ErrMuxEnded
	}
}

// Close stops Accept; the session and streams already accepted go on.
func (l *muxListener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		if l.id != 0 {
			l.mux.forget(l)
		}
	})
	return nil
}

// Addr is the address of the socket under the session.
func (l *muxListener) Addr() net.Addr {
	if l.addr == nil {
		return muxAddr{}
	}
	return l.addr
}

type muxAddr struct{}

func (muxAddr) Network() string { return "yamux" }
func (muxAddr) String() string  { return "multiplexed" }

// slotConn is a stream of the peer handed out by route: closing it frees
// its slot.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
