package guestcall

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	protobuf "google.golang.org/protobuf/proto"
)

type client struct {
	open  func() (net.Conn, error)
	codec encoding.CodecV2
	lane  *hostLane // carries the unary calls
	stats connStats
}

// defaultMaxRecv is grpc-go's default bound on a received message, for a
// call that sets none.
const defaultMaxRecv = 4 << 20

// callOptions are the call options this path honours.
type callOptions struct {
	header, trailer *metadata.MD
	peer            *peer.Peer
	maxRecv         int
	maxSend         int
	onFinish        []func(error)
	stats           *callStats // nil without stats handlers
}

// readOptions reads opts, and reports false for one this path does not
// carry.
func readOptions(opts []grpc.CallOption) (callOptions, bool) {
	o := callOptions{maxRecv: defaultMaxRecv, maxSend: -1}
	for _, opt := range opts {
		switch v := opt.(type) {
		case grpc.HeaderCallOption:
			o.header = v.HeaderAddr
		case grpc.TrailerCallOption:
			o.trailer = v.TrailerAddr
		case grpc.PeerCallOption:
			o.peer = v.PeerAddr
		case grpc.MaxRecvMsgSizeCallOption:
			o.maxRecv = v.MaxRecvMsgSize
		case grpc.MaxSendMsgSizeCallOption:
			o.maxSend = v.MaxSendMsgSize
		case grpc.OnFinishCallOption:
			o.onFinish = append(o.onFinish, v.OnFinish)
		case grpc.CompressorCallOption, grpc.ContentSubtypeCallOption, grpc.ForceCodecCallOption,
			grpc.ForceCodecV2CallOption, grpc.CustomCodecCallOption, grpc.PerRPCCredsCallOption:
			return o, false
		}
	}
	return o, true
}

func (c *client) invoke(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	o, ok := readOptions(opts)
	hs, statsOK := c.stats.read(cc)
	if !ok || !statsOK {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	ctx, o.stats = beginStats(ctx, hs, method, &grpc.StreamDesc{})
	return c.lane.invoke(ctx, method, req, reply, o)
}

func (c *client) newStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	o, ok := readOptions(opts)
	hs, statsOK := c.stats.read(cc)
	if !ok || !statsOK {
		return streamer(ctx, desc, cc, method, opts...)
	}
	ctx, o.stats = beginStats(ctx, hs, method, desc)
	cs, err := c.start(ctx, desc, method, o)
	if err != nil {
		return nil, err
	}
	cs.mu.Lock()
	err = cs.flush()
	cs.mu.Unlock()
	if err != nil {
		return nil, cs.end(err)
	}
	return cs, nil
}

// start opens a call stream and queues its call frame.
func (c *client) start(ctx context.Context, desc *grpc.StreamDesc, method string, o callOptions) (*clientStream, error) {
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return nil, finished(o, status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error()))
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, finished(o, status.FromContextError(err).Err())
	}
	conn, err := c.open()
	if err != nil {
		return nil, finished(o, status.Errorf(codes.Unavailable, "opening a call to the guest: %v", err))
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	payload := appendString(nil, method)
	payload = binaryAppendUvarint(payload, uint64(timeout))
	payload = appendMD(payload, md)
	cs := &clientStream{c: c, ctx: ctx, desc: desc, conn: conn, r: bufio.NewReaderSize(conn, 4096), o: o, headerc: make(chan struct{})}
	cs.out = append(cs.out, Magic...)
	cs.out = appendFrame(cs.out, kindCall, 0, payload)
	if o.peer != nil {
		*o.peer = peer.Peer{Addr: conn.RemoteAddr(), LocalAddr: conn.LocalAddr()}
	}
	cs.stopWatch = context.AfterFunc(ctx, cs.cancel)
	return cs, nil
}

// finished reports the call's end to the stats handlers and calls the
// OnFinish options with err, and returns it.
func finished(o callOptions, err error) error {
	o.stats.end(err, nil)
	for _, f := range o.onFinish {
		f(err)
	}
	return err
}

// clientStream is a call as the host's code sees it.
type clientStream struct {
	c         *client
	ctx       context.Context
	desc      *grpc.StreamDesc
	conn      net.Conn
	r         *bufio.Reader
	o         callOptions
	stopWatch func() bool

	mu     sync.Mutex // guards out and writes
	out    []byte
	closed bool // the end of the messages is sent

	recvMu   sync.Mutex // one reader of frames at a time
	header   metadata.MD
	headerc  chan struct{} // closed once the header (or the trailer) is read
	gotHead  bool
	pending  []byte // a message read while waiting for the header
	havePend bool
	received int
	status   *status.Status // from the trailer, once read
	trailer  metadata.MD
	endOnce  sync.Once
	endErr   error
}

var _ grpc.ClientStream = (*clientStream)(nil)

// flush writes what is queued; cs.mu is held.
func (cs *clientStream) flush() error {
	if len(cs.out) == 0 {
		return nil
	}
	_, err := cs.conn.Write(cs.out)
	cs.out = cs.out[:0]
	if err != nil {
		return cs.connErr(err)
	}
	return nil
}

// connErr is the status of a call whose stream failed with err.
func (cs *clientStream) connErr(err error) error {
	if cerr := cs.ctx.Err(); cerr != nil {
		return status.FromContextError(cerr).Err()
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Errorf(codes.Unavailable, "the guest's connection: %v", err)
}

// cancel tells the guest the call is cancelled and ends the stream's
// waits.
func (cs *clientStream) cancel() {
	cs.conn.SetReadDeadline(time.Now())
	cs.conn.SetWriteDeadline(time.Now().Add(time.Second))
	cs.mu.Lock()
	cs.out = appendFrame(cs.out[:0], kindCancel, 0, nil)
	cs.flush()
	cs.mu.Unlock()
	cs.conn.Close()
}

func (cs *clientStream) Context() context.Context { return cs.ctx }

func (cs *clientStream) SendMsg(m any) error {
	data, err := cs.c.codec.Marshal(m)
	if err != nil {
		return status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
	}
	defer data.Free()
	n := data.Len()
	if cs.o.maxSend >= 0 && n > cs.o.maxSend {
		return status.Errorf(codes.ResourceExhausted, "grpc: trying to send message larger than max (%d vs. %d)", n, cs.o.maxSend)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return status.Error(codes.Internal, "SendMsg called after CloseSend")
	}
	cs.out = appendHead(cs.out, kindMessage, 0, n)
	for _, b := range data {
		cs.out = append(cs.out, b.ReadOnlyData()...)
	}
	if err := cs.flush(); err != nil {
		// As grpc-go: the failure shows in RecvMsg.
		return io.EOF
	}
	return nil
}

func (cs *clientStream) CloseSend() error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil
	}
	cs.closed = true
	cs.out = appendFrame(cs.out, kindEnd, 0, nil)
	cs.flush() // as grpc-go: a failure shows in RecvMsg
	return nil
}

// limit is how much each frame kind from the guest may hold.
func (cs *clientStream) limit(k byte, _ uint32) int {
	switch k {
	case kindMessage:
		if cs.o.maxRecv < 0 {
			return 0
		}
		return cs.o.maxRecv
	case kindHeader, kindTrailer:
		return MaxMetadata
	}
	return 0
}

// next reads the next frame that is not the header: a message (ok) or
// the end of the call (err, io.EOF for an OK status); cs.recvMu is held.
func (cs *clientStream) next() (msg []byte, err error) {
	if cs.havePend {
		cs.havePend = false
		return cs.pending, nil
	}
	if cs.status != nil {
		return nil, cs.statusErr()
	}
	for {
		kind, _, p, err := readFrame(cs.r, cs.limit)
		if err != nil {
			if fe := (*errFrameTooLarge)(nil); errors.As(err, &fe) && fe.kind == kindMessage {
				return nil, status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", fe.size, cs.o.maxRecv)
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				if cerr := cs.ctx.Err(); cerr != nil {
					return nil, status.FromContextError(cerr).Err()
				}
				return nil, status.Error(codes.Internal, "the guest ended the call without a status")
			}
			if fe := (*errFrameTooLarge)(nil); errors.As(err, &fe) || cs.ctx.Err() == nil && !isConnErr(err) {
				return nil, status.Errorf(codes.Internal, "the guest answered with %v", err)
			}
			return nil, cs.connErr(err)
		}
		switch kind {
		case kindHeader:
			if cs.gotHead {
				return nil, status.Error(codes.Internal, "the guest sent a second header")
			}
			d := decoder{b: p}
			cs.header = d.md()
			if d.err != nil {
				return nil, status.Errorf(codes.Internal, "the guest sent a bad header: %v", d.err)
			}
			cs.gotHeader()
		case kindMessage:
			if !cs.gotHead {
				cs.gotHeader()
			}
			return p, nil
		case kindTrailer:
			st, md, err := parseTrailer(p)
			if err != nil {
				return nil, err
			}
			cs.trailer = md
			cs.status = st
			cs.o.stats.trailer(md)
			if !cs.gotHead {
				cs.gotHeader()
			}
			return nil, cs.statusErr()
		}
	}
}

// isConnErr reports an error of the connection rather than of what the
// guest sent.
func isConnErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}

func (cs *clientStream) gotHeader() {
	cs.gotHead = true
	if cs.o.header != nil {
		*cs.o.header = cs.header
	}
	close(cs.headerc)
}

// statusErr is the trailer's status as RecvMsg returns it: io.EOF for OK.
func (cs *clientStream) statusErr() error {
	if cs.status.Code() == codes.OK {
		return io.EOF
	}
	return cs.status.Err()
}

func (cs *clientStream) Header() (metadata.MD, error) {
	cs.recvMu.Lock()
	defer cs.recvMu.Unlock()
	if !cs.gotHead && cs.status == nil && !cs.havePend {
		msg, err := cs.next()
		if err == nil {
			cs.pending, cs.havePend = msg, true
		} else if cs.status == nil {
			cs.end(err)
			return nil, err
		}
	}
	return cs.header, nil
}

func (cs *clientStream) Trailer() metadata.MD {
	cs.recvMu.Lock()
	defer cs.recvMu.Unlock()
	return cs.trailer
}

func (cs *clientStream) RecvMsg(m any) error {
	cs.recvMu.Lock()
	defer cs.recvMu.Unlock()
	msg, err := cs.next()
	if err != nil {
		return cs.end(err)
	}
	cs.received++
	if err := cs.c.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(msg)}, m); err != nil {
		return cs.end(status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err))
	}
	if !cs.desc.ServerStreams {
		// One message, then the status: as grpc-go, read it now.
		_, err := cs.next()
		if err == io.EOF {
			cs.end(io.EOF)
			return nil
		}
		if err == nil {
			err = status.Error(codes.Internal, "cardinality violation: expected <EOF> for non server-streaming RPCs, but received another message")
		}
		return cs.end(err)
	}
	return nil
}

// end ends the call once with err (io.EOF: it ended well), and returns
// err.
func (cs *clientStream) end(err error) error {
	cs.endOnce.Do(func() {
		cs.stopWatch()
		if cs.o.trailer != nil {
			*cs.o.trailer = cs.trailer
		}
		if !cs.gotHead {
			cs.gotHead = true
			close(cs.headerc)
		}
		cs.conn.Close()
		ferr := err
		if ferr == io.EOF {
			ferr = nil
		}
		cs.endErr = ferr
		finished(cs.o, ferr)
	})
	return err
}

func binaryAppendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// decodeStatus reads a google.rpc.Status.
func decodeStatus(b string) (*status.Status, error) {
	var pb spb.Status
	if err := protobuf.Unmarshal([]byte(b), &pb); err != nil {
		return nil, status.Errorf(codes.Internal, "the guest sent a bad status: %v", err)
	}
	return status.FromProto(&pb), nil
}
