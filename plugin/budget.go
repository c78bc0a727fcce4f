package plugin

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/net/http2"
	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// readCopies is how many times gRPC may hold a request message while it
// reads and decodes it: its wire buffers, the contiguous copy proto
// decodes from, and the decoded message.
const readCopies = 3

// budget is the service-wide memory budget of the requests in flight (see
// ServiceLimits.MaxInflightBytes).
//
// gRPC reads a message only when the handler's goroutine asks for it, and
// until then lets a client send no more of it than the stream's
// flow-control window (streamWindow); then it reads the whole message
// before any handler code runs. So the size must be known before that
// read: each connection's frameSniffer reads the 5-byte gRPC prefix of
// every request message as it arrives, before gRPC's framer, which reads
// unbuffered (grpc.ReadBufferSize(0)) and so never behind the sniffer. In
// the handler's goroutine, just before the read (the stats handler's Begin
// for a unary or server-streaming call, the stream interceptor's RecvMsg
// for each message of a client stream), the call waits for the next
// message's prefix and then for room for readCopies times its size
// (compressed: its size plus twice the most it may decode to); once the
// message is decoded, it counts its decoded size until the call ends or
// asks for its next message.
//
// What a compressed message may decode to: for gzip, bounded by its
// compressed size, as deflate emits at most 258 bytes for two bits
// (deflateMaxRatio), so a gzip message of n bytes takes n plus twice
// min(maximum message size, deflateMaxRatio×n); for another compressor,
// the maximum message size. The compression is the call's grpc-encoding,
// which the stats handler's InHeader gives before Begin.
//
// A call's headers count too (headerCost), from the moment the tap admits
// the call until it ends: gRPC keeps them, as the call's metadata, for the
// call's whole life. A connection's calls, headers and messages, hold at
// most a share of the budget (share, connShares): one client cannot take
// the whole of it from the others.
type budget struct {
	limit   int64 // bytes
	maxMsg  int64
	maxCost int64 // what a message may take: readCopies × maxMsg
	sem     *semaphore.Weighted
	used    atomic.Int64 // bytes held in sem
	queued  atomic.Int64 // bytes the calls waiting for room ask for
}

func newBudget(limit int64, maxMsg int) *budget {
	return &budget{limit: limit, maxMsg: int64(maxMsg), maxCost: readCopies * int64(maxMsg), sem: semaphore.NewWeighted(limit)}
}

// deflateMaxRatio bounds what a deflate (gzip) stream decodes to, per
// byte: a length-distance pair of 258 bytes coded in two bits.
const deflateMaxRatio = 1032

// connShares is how many connections it takes to fill the budget: one
// connection's calls hold at most a quarter of it (or the room one
// message takes, when that is more).
const connShares = 4

// headerCopies is how many times gRPC holds a call's headers: the
// decoded fields, kept as the call's metadata, and the maps and slices
// around them.
const headerCopies = 2

// share is one connection's share of the budget.
type share struct {
	sem    *semaphore.Weighted
	limit  int64
	used   atomic.Int64
	queued atomic.Int64
}

// When the sizes of a connection's messages are unknown (sized false: its
// transport is not the one the frameSniffer follows, grpc.Creds in
// Config.ServerOptions), every message's read takes the room the largest
// one would (maxCost), for as long as it is read or, on a client stream,
// awaited. The calls that live as long as the connection (a host's health
// watch and broker stream) hold their headers and request all along: a
// share of maxCost would leave no later call room to read anything. Such
// a connection's share is room for one read beside a quarter of the
// budget held (at most the whole budget): what the service buffers stays
// within the budget, and its calls are read one at a time.
func (b *budget) newShare(sized bool) *share {
	n := max(b.limit/connShares, min(b.maxCost, b.limit))
	if !sized {
		n = min(b.limit, b.maxCost+b.limit/connShares)
	}
	return &share{sem: semaphore.NewWeighted(n), limit: n}
}

func (s *share) release(n int64) {
	if s != nil && n > 0 {
		s.used.Add(-n)
		s.sem.Release(n)
	}
}

// acquire waits for n bytes of the connection's share s (nil: none), then
// of the budget.
func (b *budget) acquire(ctx context.Context, s *share, n int64) error {
	if s != nil {
		s.queued.Add(n)
		err := s.sem.Acquire(ctx, n)
		s.queued.Add(-n)
		if err != nil {
			return err
		}
		s.used.Add(n)
	}
	b.queued.Add(n)
	err := b.sem.Acquire(ctx, n)
	b.queued.Add(-n)
	if err != nil {
		s.release(n)
		return err
	}
	b.used.Add(n)
	return nil
}

func (b *budget) release(s *share, n int64) {
	if n > 0 {
		b.used.Add(-n)
		b.sem.Release(n)
		s.release(n)
	}
}

// headerCost is the room a call's headers take: their size as HTTP/2
// counts it (name, value and 32 bytes per field), headerCopies times.
func headerCost(md metadata.MD) int64 {
	var n int64
	for k, vs := range md {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 32)
		}
	}
	return headerCopies * n
}

type callBudgetKey struct{}

// msgSize is a request message's size, from its prefix.
type msgSize struct {
	n          int64
	compressed bool
}

// cost is the room reading and decoding the message takes, compressed
// with compression: none for one above the maximum size, which gRPC
// refuses without reading it.
func (m msgSize) cost(b *budget, compression string) int64 {
	if m.n > b.maxMsg {
		return 0
	}
	// All are at most maxCost, as m.n is at most maxMsg.
	switch {
	case !m.compressed:
		return readCopies * m.n
	case compression == "gzip":
		return m.n + 2*min(b.maxMsg, deflateMaxRatio*m.n)
	default:
		return m.n + 2*b.maxMsg
	}
}

// callBudget is one call's share of the budget.
type callBudget struct {
	b      *budget
	share  *share        // the connection's, or nil
	sn     *frameSniffer // nil: sizes unknown, each message costs maxCost
	stream uint32        // the call's stream, in sn

	// The prefix of the message arriving, parsed by the connection's
	// reader goroutine only.
	prefix   [5]byte
	prefixN  int
	bodyLeft int64

	mu    sync.Mutex
	sizes []msgSize // messages announced by their prefix, not yet read
	// first backs sizes for the first message: a unary call's one
	// request announces without allocating.
	first       [1]msgSize
	eos         bool          // the client sent its last message
	wake        chan struct{} // made by a call waiting for sizes or eos; closed, and cleared, when they change
	inSem       int64         // bytes this call holds in b.sem
	pending     int64         // of inSem, the reservation for the message being read
	header      int64         // the headers' cost (headerCost)
	headerHeld  bool          // of inSem, header is the headers'; else counted as queued
	compression string        // the client's grpc-encoding
	ended       bool

	// stop cancels the settling at the context's end (context.AfterFunc).
	stop func() bool
	// unary: the call sends one request and gets one response; set by
	// the call's goroutine (stats.Begin) and read by it only.
	unary bool
}

// tap refuses a call when the requests in flight and those waiting for
// room take the whole budget, and otherwise attaches the call's account,
// which is settled when the call's context ends, however the call ends.
func (b *budget) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	hdr := headerCost(info.Header)
	s, _ := ctx.Value(shareKey{}).(*share)
	if s != nil {
		if used, queued := s.used.Load(), s.queued.Load(); used+queued+hdr > s.limit {
			return nil, status.Errorf(codes.ResourceExhausted,
				"plugin service: this connection's requests in flight (%d MiB) and waiting (%d MiB) take its whole share (%d MiB) of the service's memory budget of %d MiB (%s): retry later with backoff, send fewer or smaller requests at once, or have the operator raise %s",
				used>>20, queued>>20, s.limit>>20, b.limit>>20, EnvMaxInflightBytes, EnvMaxInflightBytes)
		}
	}
	if used, queued := b.used.Load(), b.queued.Load(); used+queued+hdr > b.limit {
		return nil, status.Errorf(codes.ResourceExhausted,
			"plugin service: the requests in flight (%d MiB) and those waiting (%d MiB) take its whole memory budget of %d MiB (%s): retry later with backoff, send smaller messages, or have the operator raise %s",
			used>>20, queued>>20, b.limit>>20, EnvMaxInflightBytes, EnvMaxInflightBytes)
	}
	// The headers count as waiting until the call's goroutine takes
	// their room (takeHeader).
	cb := &callBudget{b: b, share: s, header: hdr}
	cb.sizes = cb.first[:0]
	b.queued.Add(hdr)
	if s != nil {
		s.queued.Add(hdr)
	}
	// The tap runs on the connection's reader goroutine, right after the
	// framer read this stream's headers.
	if sn, _ := ctx.Value(snifferKey{}).(*frameSniffer); sn != nil && sn.following() {
		cb.sn, cb.stream, cb.eos = sn, sn.lastHeaders, sn.lastHeadersEnd
		sn.register(cb)
	}
	// Settled when the context ends, however the call ends; a unary call
	// that answers settles earlier, in its own goroutine (settleUnary).
	cb.stop = context.AfterFunc(ctx, cb.end)
	return context.WithValue(ctx, callBudgetKey{}, cb), nil
}

// takeHeader waits for room for the call's headers, and records the
// compression of its messages: the call's goroutine calls it first.
func (cb *callBudget) takeHeader(ctx context.Context, compression string) {
	cb.mu.Lock()
	if cb.ended || cb.headerHeld {
		cb.mu.Unlock()
		return
	}
	cb.headerHeld, cb.compression = true, compression
	cb.unqueueHeaderLocked()
	cb.mu.Unlock()
	if cb.header == 0 {
		return
	}
	if err := cb.b.acquire(ctx, cb.share, cb.header); err != nil {
		cb.mu.Lock()
		cb.header = 0 // never held
		cb.mu.Unlock()
		return
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.ended {
		cb.b.release(cb.share, cb.header)
		return
	}
	cb.inSem += cb.header
}

// unqueueHeaderLocked takes the headers' cost out of the bytes counted as
// waiting (the tap's count).
func (cb *callBudget) unqueueHeaderLocked() {
	cb.b.queued.Add(-cb.header)
	if cb.share != nil {
		cb.share.queued.Add(-cb.header)
	}
}

// reserveNext waits for the next message's size, then for room to read
// it, while ctx lasts. A reservation not yet used is kept.
func (cb *callBudget) reserveNext(ctx context.Context) {
	cb.mu.Lock()
	if cb.ended || cb.pending > 0 {
		cb.mu.Unlock()
		return
	}
	cost := cb.b.maxCost
	if cb.sn != nil {
		for len(cb.sizes) == 0 && !cb.eos {
			if cb.wake == nil {
				cb.wake = make(chan struct{})
			}
			wake := cb.wake
			cb.mu.Unlock()
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
			cb.mu.Lock()
			if cb.ended {
				cb.mu.Unlock()
				return
			}
		}
		if len(cb.sizes) == 0 {
			cb.mu.Unlock()
			return // no message comes
		}
		cost = cb.sizes[0].cost(cb.b, cb.compression)
		cb.sizes = cb.sizes[1:]
	}
	// Never more than the call could ever get beside its own headers.
	room := cb.b.limit
	if cb.share != nil {
		room = cb.share.limit
	}
	cost = min(cost, room-cb.header)
	cb.mu.Unlock()
	if cost <= 0 {
		return
	}
	if err := cb.b.acquire(ctx, cb.share, cost); err != nil {
		return
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.ended {
		cb.b.release(cb.share, cost)
		return
	}
	cb.inSem += cost
	cb.pending = cost
}

// received shrinks the reservation to the decoded message's size n.
func (cb *callBudget) received(n int64) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.ended || cb.pending == 0 {
		return
	}
	n = min(n, cb.pending)
	cb.b.release(cb.share, cb.pending-n)
	cb.inSem -= cb.pending - n
	cb.pending = 0
}

// drop releases the messages decoded so far: a client-streaming handler
// asks for the next one. The headers stay.
func (cb *callBudget) drop() {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.ended {
		return
	}
	n := cb.inSem - cb.pending
	if cb.headerHeld {
		n -= cb.header
	}
	if n <= 0 {
		return
	}
	cb.inSem -= n
	cb.b.release(cb.share, n)
}

// settleUnary settles a unary call once its response is sent: its request
// was read, decoded and handled, and the call ends without waiting for
// the client. It saves the goroutine context.AfterFunc starts at the
// context's end, which gRPC cancels before it queues the call's trailers:
// across a network that goroutine cost a thread wake-up in every call's
// round trip (TestServiceUnaryCallStartsNoGoroutineOfItsOwn).
func (cb *callBudget) settleUnary() {
	if cb.unary && cb.stop() {
		cb.end()
	}
}

// end settles the call when its context ends.
func (cb *callBudget) end() {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.ended {
		return
	}
	cb.ended = true
	if !cb.headerHeld {
		cb.headerHeld = true
		cb.unqueueHeaderLocked()
	}
	cb.b.release(cb.share, cb.inSem)
	cb.inSem, cb.pending = 0, 0
	if cb.sn != nil {
		cb.sn.unregister(cb)
	}
}

// announce records the next message's size, or the end of the client's
// messages.
func (cb *callBudget) announce(m msgSize, eos bool) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if eos {
		cb.eos = true
	} else {
		cb.sizes = append(cb.sizes, m)
	}
	if cb.wake != nil {
		close(cb.wake)
		cb.wake = nil
	}
}

// data follows a DATA frame's payload of this call's stream.
func (cb *callBudget) data(p []byte) {
	for len(p) > 0 {
		if cb.bodyLeft > 0 {
			n := min(cb.bodyLeft, int64(len(p)))
			cb.bodyLeft -= n
			p = p[n:]
			continue
		}
		n := copy(cb.prefix[cb.prefixN:], p)
		cb.prefixN += n
		p = p[n:]
		if cb.prefixN == len(cb.prefix) {
			cb.prefixN = 0
			cb.bodyLeft = int64(binary.BigEndian.Uint32(cb.prefix[1:]))
			cb.announce(msgSize{n: cb.bodyLeft, compressed: cb.prefix[0]&1 != 0}, false)
		}
	}
}

// streamBudget is the stream interceptor that reserves room before each
// message of a client-streaming call is read, and lets the previous one
// go. While the handler waits for its client's next message, the call
// holds no room: it waits for the message's prefix first.
func streamBudget(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	cb, _ := ss.Context().Value(callBudgetKey{}).(*callBudget)
	if cb == nil || !info.IsClientStream {
		return handler(srv, ss)
	}
	return handler(srv, budgetStream{ServerStream: ss, cb: cb})
}

type budgetStream struct {
	grpc.ServerStream
	cb *callBudget
}

func (s budgetStream) RecvMsg(m any) error {
	s.cb.drop()
	s.cb.reserveNext(s.Context())
	return s.ServerStream.RecvMsg(m)
}

type snifferKey struct{}

// shareKey is the context key of a connection's share of the budget.
type shareKey struct{}

// frameSniffer follows the frames a client sends on one connection, as
// gRPC's framer reads them, for the budget: which stream's headers came
// last (the stream the tap is called for), and the DATA of the streams
// of calls with a callBudget. It parses frame headers and gRPC message
// prefixes only; gRPC checks the rest. Read by the connection's reader
// goroutine only, except calls.
type frameSniffer struct {
	preface  int  // bytes of the client preface read
	lost     bool // the bytes are not the client preface: another transport's (grpc.Creds in Config.ServerOptions)
	hdr      [9]byte
	hdrN     int
	inFrame  bool
	typ      http2.FrameType
	flags    http2.Flags
	stream   uint32
	needPad  bool  // the next payload byte is the pad length
	dataLeft int64 // data bytes left in the frame
	skipLeft int64 // other bytes left in the frame
	// The stream whose headers came last, and whether they ended it.
	lastHeaders    uint32
	lastHeadersEnd bool

	mu    sync.Mutex
	calls map[uint32]*callBudget
}

func newFrameSniffer() *frameSniffer {
	return &frameSniffer{calls: make(map[uint32]*callBudget)}
}

// following reports whether the sniffer follows the client's frames: it
// read the client preface. It does not when the server's transport is
// not the one the sniffer was placed for (grpc.Creds in
// Config.ServerOptions): the calls' sizes are then unknown.
func (s *frameSniffer) following() bool {
	return !s.lost && s.preface == len(http2.ClientPreface)
}

func (s *frameSniffer) register(cb *callBudget) {
	s.mu.Lock()
	s.calls[cb.stream] = cb
	s.mu.Unlock()
}

func (s *frameSniffer) unregister(cb *callBudget) {
	s.mu.Lock()
	if s.calls[cb.stream] == cb {
		delete(s.calls, cb.stream)
	}
	s.mu.Unlock()
}

func (s *frameSniffer) call(stream uint32) *callBudget {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[stream]
}

// read follows bytes the framer read.
func (s *frameSniffer) read(p []byte) {
	for len(p) > 0 {
		if s.lost {
			return
		}
		if s.preface < len(http2.ClientPreface) {
			n := min(len(http2.ClientPreface)-s.preface, len(p))
			if string(p[:n]) != http2.ClientPreface[s.preface:s.preface+n] {
				s.lost = true
				return
			}
			s.preface += n
			p = p[n:]
			continue
		}
		if !s.inFrame {
			n := copy(s.hdr[s.hdrN:], p)
			s.hdrN += n
			p = p[n:]
			if s.hdrN < len(s.hdr) {
				return
			}
			s.hdrN = 0
			s.startFrame()
			continue
		}
		if s.needPad {
			s.needPad = false
			pad := int64(p[0])
			p = p[1:]
			s.dataLeft--
			if pad > s.dataLeft {
				pad = s.dataLeft // a protocol error, which gRPC answers
			}
			s.dataLeft -= pad
			s.skipLeft = pad
		}
		if n := min(s.dataLeft, int64(len(p))); n > 0 {
			if cb := s.call(s.stream); cb != nil {
				cb.data(p[:n])
			}
			s.dataLeft -= n
			p = p[n:]
		}
		n := min(s.skipLeft, int64(len(p)))
		s.skipLeft -= n
		p = p[n:]
		s.maybeEndFrame()
	}
}

func (s *frameSniffer) startFrame() {
	length := int64(s.hdr[0])<<16 | int64(s.hdr[1])<<8 | int64(s.hdr[2])
	s.typ, s.flags = http2.FrameType(s.hdr[3]), http2.Flags(s.hdr[4])
	s.stream = binary.BigEndian.Uint32(s.hdr[5:]) & (1<<31 - 1)
	s.inFrame = true
	s.dataLeft, s.skipLeft, s.needPad = 0, 0, false
	switch {
	case s.typ == http2.FrameData:
		s.dataLeft = length
		s.needPad = s.flags.Has(http2.FlagDataPadded) && length > 0
	case s.typ == http2.FrameHeaders:
		s.lastHeaders, s.lastHeadersEnd = s.stream, s.flags.Has(http2.FlagHeadersEndStream)
		s.skipLeft = length
	default:
		s.skipLeft = length
	}
	s.maybeEndFrame()
}

func (s *frameSniffer) maybeEndFrame() {
	if !s.inFrame || s.needPad || s.dataLeft > 0 || s.skipLeft > 0 {
		return
	}
	s.inFrame = false
	if s.typ == http2.FrameData && s.flags.Has(http2.FlagDataEndStream) {
		if cb := s.call(s.stream); cb != nil {
			cb.announce(msgSize{}, true)
		}
	}
}

// sniffCreds are TLS credentials whose connections a frameSniffer
// follows, after the handshake.
type sniffCreds struct {
	credentials.TransportCredentials
}

func (c sniffCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		return conn, info, err
	}
	if lc, ok := raw.(*limitConn); ok && lc.sniffer != nil {
		return sniffConn{Conn: conn, s: lc.sniffer}, info, nil
	}
	return conn, info, nil
}

func (c sniffCreds) Clone() credentials.TransportCredentials {
	return sniffCreds{TransportCredentials: c.TransportCredentials.Clone()}
}

type sniffConn struct {
	net.Conn
	s *frameSniffer
}

func (c sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.s.read(p[:n])
	return n, err
}
