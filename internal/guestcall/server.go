package guestcall

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	protobuf "google.golang.org/protobuf/proto"
)

// Server serves calls over call streams with the handlers of a
// *grpc.Server.
type Server struct {
	parts  serverParts
	codec  encoding.CodecV2
	ctx    context.Context // ends the calls' contexts at Stop
	stop   context.CancelFunc
	calls  sync.WaitGroup
	mu     sync.Mutex
	closed bool
}

// NewServer returns a Server for srv's services, once they are all
// registered; an error says srv has an option this path does not carry
// (serve srv over HTTP/2 alone then).
func NewServer(srv *grpc.Server) (*Server, error) {
	parts, err := readServer(srv)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Server{parts: parts, codec: encoding.GetCodecV2(proto.Name), ctx: ctx, stop: stop}, nil
}

// Split returns a listener of what ln accepts that is not a call stream
// (the HTTP/2 connection of a host that does not use this package), and
// serves every call stream itself, each on a goroutine of its own.
func (s *Server) Split(ln net.Listener) net.Listener {
	l := &splitListener{ln: ln, s: s, conns: make(chan net.Conn), done: make(chan struct{})}
	go l.run()
	return l
}

// Shutdown stops taking calls and waits for those under way to end, or
// for ctx to; then it ends theirs.
func (s *Server) Shutdown(ctx context.Context) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.calls.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	s.stop()
}

// begin counts a call in, unless the server is shut down.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.calls.Add(1)
	return true
}

// splitListener hands ln's HTTP/2 connections to Accept.
type splitListener struct {
	ln        net.Listener
	s         *Server
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	err       error // ln's Accept error, which ended run
}

func (l *splitListener) run() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			l.mu.Lock()
			l.err = err
			l.mu.Unlock()
			l.Close()
			return
		}
		go l.route(c)
	}
}

// route reads the first bytes of c: Magic makes it a call, anything else
// goes to Accept with those bytes still to be read.
func (l *splitListener) route(c net.Conn) {
	br := bufio.NewReaderSize(c, 4096)
	head, err := br.Peek(len(Magic))
	if err != nil {
		c.Close() // a call abandoned before its first frame
		return
	}
	switch string(head) {
	case Magic:
		br.Discard(len(Magic))
		l.s.serveCall(c, br)
		return
	}
	select {
	case l.conns <- &peekedConn{Conn: c, r: br}:
	case <-l.done:
		c.Close()
	}
}

func (l *splitListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err != nil {
			return nil, l.err
		}
		return nil, net.ErrClosed
	}
}

// Close closes ln too: call streams accepted already go on.
func (l *splitListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.ln.Close()
	})
	return nil
}

func (l *splitListener) Addr() net.Addr { return l.ln.Addr() }

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// serveCall serves the call on c, whose Magic is read; the goroutine
// reads the host's frames while the handler runs on another.
func (s *Server) serveCall(c net.Conn, br *bufio.Reader) {
	defer c.Close()
	if !s.begin() {
		return
	}
	defer s.calls.Done()
	kind, _, p, err := readFrame(br, func(k byte, _ uint32) int {
		if k == kindCall {
			return MaxMetadata
		}
		return 0
	})
	if err != nil || kind != kindCall {
		return
	}
	d := decoder{b: p}
	method, timeout, md := d.string(), int64(d.uvarint()), d.md()
	if d.err != nil {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	if timeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(ctx, time.Duration(timeout))
		defer cancelT()
	}
	st := &serverStream{s: s, conn: c, method: method, msgs: make(chan []byte, 1)}
	ctx = metadata.NewIncomingContext(ctx, md)
	ctx = peer.NewContext(ctx, &peer.Peer{Addr: c.RemoteAddr(), LocalAddr: c.LocalAddr()})
	st.ctx = grpc.NewContextWithServerTransportStream(ctx, transportStream{st})
	handled := make(chan struct{})
	go func() {
		defer close(handled)
		st.finish(s.dispatch(st))
	}()
	// Read the host's messages, its end of them, or its cancel.
	limit := func(k byte, _ uint32) int {
		switch k {
		case kindMessage:
			return max(s.parts.maxRecv, 0) + 1 // one more, for RecvMsg to refuse
		case kindEnd, kindCancel:
			return 1
		}
		return 0
	}
	var recvErr error
	ended := false // the host sent the end of its messages
	for recvErr == nil {
		kind, _, p, err := readFrame(br, limit)
		switch {
		case err != nil:
			if fe := (*errFrameTooLarge)(nil); errors.As(err, &fe) {
				st.fail(status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", fe.size, s.parts.maxRecv))
			} else {
				cancel()
			}
			recvErr = err
		case kind == kindMessage && ended:
			recvErr = errors.New("a message after the end of the messages")
			cancel()
		case kind == kindMessage:
			select {
			case st.msgs <- p:
			case <-handled:
				recvErr = io.EOF
			case <-ctx.Done():
				recvErr = ctx.Err()
			}
		case kind == kindEnd:
			ended = true
			st.endOnce.Do(func() { close(st.msgs) })
		case kind == kindCancel:
			cancel()
			recvErr = context.Canceled
		}
	}
	<-handled
}

// dispatch runs the call's handler, as grpc-go's server would.
func (s *Server) dispatch(st *serverStream) error {
	m := strings.TrimPrefix(st.method, "/")
	i := strings.LastIndex(m, "/")
	if i <= 0 {
		return status.Errorf(codes.Unimplemented, "malformed method name: %q", st.method)
	}
	svc, name := m[:i], m[i+1:]
	var impl any
	desc := s.parts.unknown
	if sv, ok := s.parts.services[svc]; ok {
		impl = sv.impl
		if d, ok := sv.methods[name]; ok {
			desc = d
		} else if desc == nil {
			return status.Errorf(codes.Unimplemented, "unknown method %v for service %v", name, svc)
		}
	} else if desc == nil {
		return status.Errorf(codes.Unimplemented, "unknown service %v", svc)
	} else {
		impl = nil
	}
	st.desc = desc
	if s.parts.streamInt == nil || (!desc.ClientStreams && !desc.ServerStreams) {
		return desc.Handler(impl, st)
	}
	return s.parts.streamInt(impl, st, &grpc.StreamServerInfo{FullMethod: st.method, IsClientStream: desc.ClientStreams, IsServerStream: desc.ServerStreams}, desc.Handler)
}

// serverStream is a call as its handler sees it.
type serverStream struct {
	s       *Server
	conn    io.Writer // the call stream, or its lane (lockedWriter)
	id      uint32    // the call's ID on its lane; 0 on a call stream
	ctx     context.Context
	method  string
	desc    *grpc.StreamDesc
	msgs    chan []byte        // the host's messages; closed at their end
	cancel  context.CancelFunc // ends the call's context (a lane's call)
	endOnce sync.Once

	failMu  sync.Mutex // guards failed alone: RecvMsg does not hold it while it waits
	failed  error      // a receive error RecvMsg returns (a message too large)
	mu      sync.Mutex
	header  metadata.MD
	sent    bool // the header is sent
	trailer metadata.MD
	out     []byte // frames not written yet
	done    bool
}

var _ grpc.ServerStream = (*serverStream)(nil)
var _ grpc.ServerTransportStream = transportStream{}

// transportStream is the call as grpc.SetHeader, grpc.SendHeader,
// grpc.SetTrailer and grpc.Method find it in a unary handler's context.
type transportStream struct{ *serverStream }

func (t transportStream) SetTrailer(md metadata.MD) error {
	t.serverStream.SetTrailer(md)
	return nil
}

func (st *serverStream) Context() context.Context { return st.ctx }
func (st *serverStream) Method() string           { return st.method }

func (st *serverStream) SetHeader(md metadata.MD) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sent || st.done {
		return status.Error(codes.Internal, "transport: SetHeader called after the header was sent")
	}
	st.header = metadata.Join(st.header, md)
	return nil
}

func (st *serverStream) SendHeader(md metadata.MD) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sent || st.done {
		return status.Error(codes.Internal, "transport: the header was already sent")
	}
	st.header = metadata.Join(st.header, md)
	st.appendHeader()
	return st.flush()
}

func (st *serverStream) SetTrailer(md metadata.MD) {
	st.mu.Lock()
	st.trailer = metadata.Join(st.trailer, md)
	st.mu.Unlock()
}

// appendHeader queues the header frame; st.mu is held.
func (st *serverStream) appendHeader() {
	st.out = appendFrame(st.out, kindHeader, st.id, appendMD(nil, st.header))
	st.sent = true
}

// flush writes what is queued; st.mu is held.
func (st *serverStream) flush() error {
	if len(st.out) == 0 {
		return nil
	}
	_, err := st.conn.Write(st.out)
	st.out = st.out[:0]
	if err != nil {
		return status.Errorf(codes.Unavailable, "the host's connection: %v", err)
	}
	return nil
}

func (st *serverStream) SendMsg(m any) error {
	data, err := st.s.codec.Marshal(m)
	if err != nil {
		return status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
	}
	defer data.Free()
	if n := data.Len(); n > st.s.parts.maxSend {
		return status.Errorf(codes.ResourceExhausted, "grpc: trying to send message larger than max (%d vs. %d)", n, st.s.parts.maxSend)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return status.Error(codes.Internal, "grpc: the call has ended")
	}
	if !st.sent {
		st.appendHeader()
	}
	st.out = appendHead(st.out, kindMessage, st.id, data.Len())
	for _, b := range data {
		st.out = append(st.out, b.ReadOnlyData()...)
	}
	if st.desc != nil && st.desc.ServerStreams {
		return st.flush()
	}
	return nil
}

func (st *serverStream) RecvMsg(m any) error {
	if err := st.failure(); err != nil {
		return err
	}
	select {
	case p, ok := <-st.msgs:
		if !ok {
			if err := st.failure(); err != nil {
				return err
			}
			return io.EOF
		}
		if len(p) > st.s.parts.maxRecv {
			return status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", len(p), st.s.parts.maxRecv)
		}
		if err := st.s.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(p)}, m); err != nil {
			return status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
		}
		return nil
	case <-st.ctx.Done():
		return status.FromContextError(st.ctx.Err()).Err()
	}
}

func (st *serverStream) failure() error {
	st.failMu.Lock()
	defer st.failMu.Unlock()
	return st.failed
}

// fail makes RecvMsg return err from now on (the reader saw it), and
// wakes a RecvMsg that waits.
func (st *serverStream) fail(err error) {
	st.failMu.Lock()
	st.failed = err
	st.failMu.Unlock()
	st.endOnce.Do(func() { close(st.msgs) })
}

// finish writes the call's trailer: its status, from the handler's
// error, and its trailer metadata.
func (st *serverStream) finish(err error) {
	s, ok := status.FromError(err)
	if !ok {
		s = status.FromContextError(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return
	}
	if !st.sent && len(st.header) > 0 {
		st.appendHeader()
	}
	sp, merr := protobuf.Marshal(s.Proto())
	if merr != nil {
		sp, _ = protobuf.Marshal(status.New(codes.Internal, "grpc: marshaling the status: "+merr.Error()).Proto())
	}
	payload := appendString(nil, string(sp))
	payload = appendMD(payload, st.trailer)
	st.out = appendFrame(st.out, kindTrailer, st.id, payload)
	st.flush()
	st.done = true
}
