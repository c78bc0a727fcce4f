package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/internal/listen"
)

// DefaultDialTimeout is how long Dial waits for the peer's announcement
// when its context has no deadline (go-plugin waits 5 s).
const DefaultDialTimeout = 5 * time.Second

// Bounds on what a peer may leave waiting: announcements for services
// nobody has dialed yet, knocks not yet answered, and the size of an
// announced address. A peer that floods the stream cannot make this side
// hold more than about MaxPending * MaxAddress bytes, nor more than
// MaxPending knocks: the knocks beyond are ignored (the peer's Dial times
// out) and logged at most once per few seconds.
const (
	MaxPending = 256
	MaxAddress = 1024
)

// ErrClosed is returned by a broker after Close.
var ErrClosed = errors.New("broker: closed (the plugin connection is gone)")

// ErrStalled is returned by the broker's calls once the peer stopped
// reading the broker stream: a message could not be sent
// within the send timeout (10 s). The broker is then closed; the plugin
// connection must be restarted to broker again.
var ErrStalled = errors.New("broker: the peer stopped reading the broker stream (a message could not be sent within 10 s); the broker is closed: restart the plugin connection")

// defaultSendTimeout bounds each Send on the broker stream
// (Broker.sendTimeout, which tests shorten).
const defaultSendTimeout = 10 * time.Second

// Broker is one side's end of the broker stream. A plugin gets its broker
// as the second argument of its plugin.Register, a host from
// host.Client.Broker; both are ready to use.
type Broker struct {
	opts   brokerwire.Options
	mux    *multiplexer // opts.Mux, or nil without multiplexing
	nextID atomic.Uint32

	attached chan struct{} // closed once a stream is attached
	done     chan struct{} // closed by Close
	once     sync.Once

	sendMu sync.Mutex
	stream brokerwire.Stream

	dialMu sync.Mutex   // one multiplexed dial at a time: knocks and streams pair up in order
	waiter *knockWaiter // this side's knock awaiting its answer; guarded by mu

	// answers queues the answers to the peer's knocks, in the order they
	// are to be sent; Run's sender sends them. Its capacity is MaxPending,
	// and held (guarded by mu) counts the knocks admitted and not yet
	// taken from it, so queueing never blocks.
	answers chan knockAnswer
	// runEnded is closed when Run returns; senderOnce starts the sender
	// of answers (answerKnocks) at the first answer queued, so that a
	// broker whose peer never knocks (no multiplexing) keeps no goroutine
	// for it.
	runEnded   chan struct{}
	senderOnce sync.Once

	stalled     chan struct{} // closed when a Send did not complete within sendTimeout
	sendTimeout time.Duration // defaultSendTimeout but in tests
	stallOnce   sync.Once

	// Rate-limited warnings; each counts its occurrences (dropWarn: the
	// peer's announcements refused).
	dropWarn, knockWarn, answerWarn, ackWarn limitedWarning

	mu      sync.Mutex
	pending map[uint32]chan *pluginpb.ConnInfo
	held    int // the peer's knocks admitted and not yet answered
	// unanswered counts this side's knocks sent whose answer has not
	// arrived, abandoned or not.
	unanswered int
	servers    []*grpc.Server
	lns        []net.Listener
	end        func() // ends the stream runInline reads; nil for others
}

func init() {
	brokerwire.Install(brokerwire.Hooks{
		New: func(opts brokerwire.Options) (any, brokerwire.Wire) {
			b := newBroker(opts)
			return b, wiring{b}
		},
		ListenMux: func(ln net.Listener) brokerwire.Mux { return listenMux(ln) },
		DialMux: func(conn net.Conn) (brokerwire.Mux, error) {
			m, err := dialMuxConn(conn)
			if err != nil {
				return nil, err // not a nil *multiplexer in a non-nil Mux
			}
			return m, nil
		},
	})
}

// wiring is a broker's brokerwire.Wire.
type wiring struct{ b *Broker }

func (w wiring) Run(s brokerwire.Stream) error      { return w.b.run(s) }
func (w wiring) Handler() pluginpb.GRPCBrokerServer { return serverHandler{b: w.b} }

// newBroker returns a broker with no stream yet; run attaches one.
// opts.Mux, when set, must be a *multiplexer (listenMux, dialMuxConn).
func newBroker(opts brokerwire.Options) *Broker {
	m, ok := opts.Mux.(*multiplexer)
	if opts.Mux != nil && !ok {
		panic(fmt.Sprintf("broker: Options.Mux is a %T: make it with brokerwire.ListenMux or DialMux", opts.Mux))
	}
	return &Broker{
		opts:        opts,
		mux:         m,
		attached:    make(chan struct{}),
		done:        make(chan struct{}),
		answers:     make(chan knockAnswer, MaxPending),
		stalled:     make(chan struct{}),
		pending:     make(map[uint32]chan *pluginpb.ConnInfo),
		sendTimeout: defaultSendTimeout,
	}
}

// run reads the peer's announcements and knocks from s and answers the
// knocks, until the stream ends (its error is returned), the broker is
// closed (nil), or the peer stops reading: a Send on s that does not
// complete within 10 s closes the broker and Run returns ErrStalled. Only
// the first stream attaches.
//
// Run may return while a Recv or Send on s still blocks: the caller then
// ends s, by cancelling the context of a client stream or returning from
// the handler of a server stream (serverHandler does). A stream Run can
// end itself (brokerwire.EndableStream: the host's) is read in the
// caller's goroutine instead, and ended by Close or a stalled Send.
func (b *Broker) run(s brokerwire.Stream) error {
	b.sendMu.Lock()
	if b.stream != nil {
		b.sendMu.Unlock()
		return errors.New("broker: a stream is already attached")
	}
	b.stream = s
	b.runEnded = make(chan struct{})
	defer close(b.runEnded)
	close(b.attached)
	b.sendMu.Unlock()
	if e, ok := s.(brokerwire.EndableStream); ok {
		return b.runInline(e)
	}
	received := make(chan error, 1)
	go func() { received <- b.receive(s) }()
	select {
	case err := <-received:
		return err
	case <-b.stalled:
	case <-b.done:
	}
	return b.ending(nil)
}

// ending is what Run returns once it stops reading with err: ErrStalled
// after a stalled Send (the broker is closed then), nil after Close, err
// otherwise.
func (b *Broker) ending(err error) error {
	select {
	case <-b.stalled:
		b.logger().Warn(ErrStalled.Error())
		b.Close()
		return ErrStalled
	case <-b.done:
		return nil
	default:
		return err
	}
}

// runInline is run's work for a stream it can end: Close and a stalled
// Send end the stream (b.end), which ends receive.
func (b *Broker) runInline(s brokerwire.EndableStream) error {
	b.mu.Lock()
	b.end = s.End
	b.mu.Unlock()
	select {
	case <-b.done: // closed before the end was set: end it now
		s.End()
	case <-b.stalled:
		s.End()
	default:
	}
	return b.ending(b.receive(s))
}

// endStream ends the stream runInline reads, if any.
func (b *Broker) endStream() {
	b.mu.Lock()
	end := b.end
	b.mu.Unlock()
	if end != nil {
		end()
	}
}

// receive reads s until it ends.
func (b *Broker) receive(s brokerwire.Stream) error {
	for {
		info, err := s.Recv()
		if err != nil {
			return err
		}
		if k := info.GetKnock(); k != nil && info.GetAddress() == "" {
			b.knocked(info.GetServiceId(), k)
			continue
		}
		b.deliver(info)
	}
}

func (b *Broker) inbox(id uint32) chan *pluginpb.ConnInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch, ok := b.pending[id]
	if !ok {
		ch = make(chan *pluginpb.ConnInfo, 1)
		b.pending[id] = ch
	}
	return ch
}

func (b *Broker) deliver(info *pluginpb.ConnInfo) {
	id := info.GetServiceId()
	b.mu.Lock()
	_, awaited := b.pending[id]
	reason := ""
	switch {
	case len(info.GetAddress()) > MaxAddress || len(info.GetNetwork()) > 8:
		reason = fmt.Sprintf("its address is over %d bytes", MaxAddress)
	case !awaited && len(b.pending) >= MaxPending:
		reason = fmt.Sprintf("%d announcements already wait for a Dial", MaxPending)
	}
	if reason != "" {
		b.mu.Unlock()
		b.dropWarn.warn(b.logger(), "broker: dropped the peer's announcement", "service", id, "reason", reason)
		return
	}
	b.mu.Unlock()
	ch := b.inbox(id)
	select {
	case ch <- info:
	default:
		// An announcement for this ID is already waiting; the newer one
		// replaces it.
		select {
		case <-ch:
		default:
		}
		ch <- info
	}
}

func (b *Broker) logger() *slog.Logger {
	if b.opts.Logger != nil {
		return b.opts.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// NextID returns a fresh service ID, starting at 1 (go-plugin: NextId).
func (b *Broker) NextID() uint32 { return b.nextID.Add(1) }

// Accept opens a listener for service id and announces it to the peer.
// The caller serves on it and closes it. With multiplexing, nothing is
// opened or announced: the listener takes the streams the peer knocks for
// id on the multiplexed connection.
func (b *Broker) Accept(ctx context.Context, id uint32) (net.Listener, error) {
	if b.mux != nil {
		return b.mux.listen(id)
	}
	ln, err := listen.Local(b.opts.Unix)
	if err != nil {
		return nil, fmt.Errorf("broker: listening for service %d: %w", id, err)
	}
	if err := b.send(ctx, &pluginpb.ConnInfo{ServiceId: id, Network: ln.Addr().Network(), Address: ln.Addr().String()}); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

func (b *Broker) send(ctx context.Context, info *pluginpb.ConnInfo) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultDialTimeout)
		defer cancel()
	}
	select {
	case <-b.attached:
	case <-b.done:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("broker: announcing service %d: the peer never opened the broker stream: %w", info.GetServiceId(), ctx.Err())
	}
	b.sendMu.Lock()
	defer b.sendMu.Unlock()
	select {
	case <-b.stalled:
		return ErrStalled
	case <-b.done:
		return ErrClosed
	default:
	}
	// A peer that does not read makes Send block for good: past the
	// deadline, Run ends and its caller ends the stream, which ends Send.
	t := time.AfterFunc(b.sendTimeout, b.stall)
	err := b.stream.Send(info)
	if !t.Stop() {
		return fmt.Errorf("broker: sending to the peer about service %d: %w", info.GetServiceId(), ErrStalled)
	}
	if err != nil {
		return fmt.Errorf("broker: sending to the peer about service %d: %w", info.GetServiceId(), err)
	}
	return nil
}

// stall records that a Send did not complete in time; Run then closes
// the broker and returns.
func (b *Broker) stall() {
	b.stallOnce.Do(func() {
		close(b.stalled)
		b.endStream()
	})
}

// Serve serves the services that register adds on a new brokered
// connection for id, in the background, until the broker is closed. It
// returns once the peer has been told where to dial. It is go-plugin's
// AcceptAndServe, with the server built for the caller: the broker's TLS
// and message size limits apply.
func (b *Broker) Serve(ctx context.Context, id uint32, register func(*grpc.Server)) error {
	ln, err := b.Accept(ctx, id)
	if err != nil {
		return err
	}
	opts := append([]grpc.ServerOption{}, b.opts.ServerOptions...)
	if b.opts.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(b.opts.TLS)))
	}
	srv := grpc.NewServer(opts...)
	register(srv)
	b.mu.Lock()
	select {
	case <-b.done:
		b.mu.Unlock()
		ln.Close()
		return ErrClosed
	default:
	}
	b.servers = append(b.servers, srv)
	b.lns = append(b.lns, ln)
	b.mu.Unlock()
	go srv.Serve(ln)
	return nil
}

// Dial waits for the peer to announce service id and connects to it. It
// waits until ctx ends, or DefaultDialTimeout when ctx has no deadline.
// With multiplexing, it knocks for id instead and opens a stream on the
// multiplexed connection once the peer consents.
func (b *Broker) Dial(ctx context.Context, id uint32) (*grpc.ClientConn, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultDialTimeout)
		defer cancel()
	}
	if b.mux != nil {
		return b.dialMux(ctx, id)
	}
	var info *pluginpb.ConnInfo
	select {
	case info = <-b.inbox(id):
	case <-b.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, fmt.Errorf("broker: the peer did not announce service %d in time: %w", id, ctx.Err())
	}
	b.mu.Lock()
	delete(b.pending, id)
	b.mu.Unlock()
	network, address := info.GetNetwork(), info.GetAddress()
	if network != "unix" && network != "tcp" {
		return nil, fmt.Errorf("broker: service %d announced on network %q; want unix or tcp", id, network)
	}
	conn, err := grpc.NewClient("passthrough:///"+address, b.dialOptions(func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, address)
	})...)
	if err != nil {
		return nil, fmt.Errorf("broker: dialing service %d at %s: %w", id, address, err)
	}
	return conn, nil
}

// dialOptions are a brokered connection's options: the broker's TLS (or
// none), dial as the connection is reached, then Options.DialOptions.
func (b *Broker) dialOptions(dial func(context.Context) (net.Conn, error)) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if b.opts.TLS != nil {
		creds = credentials.NewTLS(b.opts.TLS)
	}
	return append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return dial(ctx) }),
	}, b.opts.DialOptions...)
}

// Close stops every brokered server and wakes every waiting Dial.
func (b *Broker) Close() error {
	b.once.Do(func() {
		close(b.done)
		b.endStream()
		b.mu.Lock()
		servers, lns := b.servers, b.lns
		b.servers, b.lns = nil, nil
		b.mu.Unlock()
		for _, s := range servers {
			s.Stop()
		}
		for _, ln := range lns {
			ln.Close()
		}
		l := b.logger()
		b.dropWarn.flush(l)
		b.knockWarn.flush(l)
		b.answerWarn.flush(l)
		b.ackWarn.flush(l)
	})
	return nil
}

// serverHandler adapts a Broker to the plugin.GRPCBroker service, for the
// side that serves the broker stream (the plugin).
type serverHandler struct {
	pluginpb.UnimplementedGRPCBrokerServer
	b *Broker
}

// StartStream attaches the host's stream to the broker. It returns when
// the stream ends or the broker is closed, so that a plugin's graceful stop
// does not wait for the host to hang up.
//
// Returning ends the stream, and with it any Recv or Send on it that Run
// left blocked.
func (h serverHandler) StartStream(s grpc.BidiStreamingServer[pluginpb.ConnInfo, pluginpb.ConnInfo]) error {
	err := h.b.run(s)
	if s.Context().Err() != nil {
		return nil
	}
	return err
}
