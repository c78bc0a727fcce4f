package guestcall

import (
	"context"
	"errors"
	"io"
	"net"
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
)

// Host is the host's end of a guest's connection that carries unary
// calls beside the multiplexed session (see Conn).
type Host struct {
	lane *hostLane
}

// NewHost takes the host's end of a guest's connection, raw; a call's
// answer is bounded by maxMessage (the most a call may receive) and
// MaxMetadata. Run the session on Conn, and the host's gRPC connection
// with DialOptions.
func NewHost(raw net.Conn, maxMessage int) *Host {
	l := &hostLane{codec: encoding.GetCodecV2(proto.Name), calls: make(map[uint32]*laneCall)}
	l.conn = newConn(raw, max(maxMessage, 0)+2*MaxMetadata+4*frameHeader, l.deliver, l.end)
	return &Host{lane: l}
}

// Conn is the connection the host's session runs on.
func (h *Host) Conn() net.Conn { return h.lane.conn }

// DialOptions make a *grpc.ClientConn carry its unary calls over the
// connection, and its streaming calls over streams that open opens (of
// the session on Conn): the innermost interceptors, so add them after
// every other option. A call with an option this path does not carry (a
// codec, a compressor, per-call credentials, a content subtype) goes over
// the ClientConn's own transport (HTTP/2), which the guest still serves.
func (h *Host) DialOptions(open func() (net.Conn, error)) []grpc.DialOption {
	c := &client{open: open, codec: h.lane.codec, lane: h.lane}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(c.invoke), grpc.WithChainStreamInterceptor(c.newStream)}
}

// hostLane carries a connection's unary calls.
type hostLane struct {
	codec encoding.CodecV2
	conn  *Conn

	mu     sync.Mutex // guards the rest
	calls  map[uint32]*laneCall
	nextID uint32
	err    error // the connection's end, once it ended
}

// laneCall is a unary call, waiting for the guest's frames.
type laneCall struct {
	maxRecv int
	frames  chan laneFrame // the header, message, trailer; or an error
}

type laneFrame struct {
	kind byte
	p    []byte
	err  error
}

// laneFrames is how many frames a call holds: a good answer has at most
// three (header, message, trailer), and the call fails at the first
// frame out of place.
const laneFrames = 4

// invoke makes a unary call.
func (l *hostLane) invoke(ctx context.Context, method string, req, reply any, o callOptions) (err error) {
	defer func() { finished(o, err) }()
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		if timeout = time.Until(dl); timeout <= 0 {
			return status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
		}
	}
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	data, err := l.codec.Marshal(req)
	if err != nil {
		return status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
	}
	defer data.Free()
	n := data.Len()
	if o.maxSend >= 0 && n > o.maxSend {
		return status.Errorf(codes.ResourceExhausted, "grpc: trying to send message larger than max (%d vs. %d)", n, o.maxSend)
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	payload := appendString(nil, method)
	payload = binaryAppendUvarint(payload, uint64(timeout))
	payload = appendMD(payload, md)
	id, lc, err := l.register(o.maxRecv)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, 3*frameHeader+len(payload)+n)
	buf = appendFrame(buf, kindCall, id, payload)
	buf = appendHead(buf, kindMessage, id, n)
	for _, b := range data {
		buf = append(buf, b.ReadOnlyData()...)
	}
	buf = appendFrame(buf, kindEnd, id, nil)
	// The write waits only while the guest has a buffer's worth unread;
	// a guest that stopped reading ends at its CPU budget or at Close.
	if err := l.conn.writeCall(buf); err != nil {
		l.forget(id)
		return status.Errorf(codes.Unavailable, "the guest's connection: %v", err)
	}
	if o.peer != nil {
		*o.peer = peer.Peer{Addr: l.conn.RemoteAddr(), LocalAddr: l.conn.LocalAddr()}
	}
	return l.wait(ctx, id, lc, reply, o)
}

// register adds a call.
func (l *hostLane) register(maxRecv int) (uint32, *laneCall, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, nil, status.Errorf(codes.Unavailable, "the guest's connection: %v", l.err)
	}
	l.nextID++
	if l.nextID == 0 {
		l.nextID = 1
	}
	lc := &laneCall{maxRecv: maxRecv, frames: make(chan laneFrame, laneFrames)}
	l.calls[l.nextID] = lc
	return l.nextID, lc, nil
}

func (l *hostLane) forget(id uint32) {
	l.mu.Lock()
	delete(l.calls, id)
	l.mu.Unlock()
}

// wait reads the call's answer from the frames deliver hands it.
func (l *hostLane) wait(ctx context.Context, id uint32, lc *laneCall, reply any, o callOptions) error {
	var header metadata.MD
	gotHeader, gotMsg := false, false
	for {
		var f laneFrame
		select {
		case f = <-lc.frames:
		case <-ctx.Done():
			l.cancel(id)
			return status.FromContextError(ctx.Err()).Err()
		}
		if f.err != nil {
			return f.err
		}
		var err error
		switch f.kind {
		case kindHeader:
			d := decoder{b: f.p}
			header = d.md()
			switch {
			case d.err != nil:
				err = status.Errorf(codes.Internal, "the guest sent a bad header: %v", d.err)
			case gotHeader || gotMsg:
				err = status.Error(codes.Internal, "the guest sent a second header")
			}
			gotHeader = true
		case kindMessage:
			if gotMsg {
				err = status.Error(codes.Internal, "cardinality violation: expected <EOF> for non server-streaming RPCs, but received another message")
				break
			}
			gotMsg = true
			if uerr := l.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(f.p)}, reply); uerr != nil {
				err = status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", uerr)
			}
		case kindTrailer:
			st, trailer, terr := parseTrailer(f.p)
			o.stats.trailer(trailer)
			if o.header != nil {
				*o.header = header
			}
			if o.trailer != nil {
				*o.trailer = trailer
			}
			switch {
			case terr != nil:
				return terr
			case st.Code() != codes.OK:
				return st.Err()
			case !gotMsg:
				return status.Error(codes.Internal, "cardinality violation: the guest ended a unary call without an answer")
			}
			return nil
		}
		if err != nil {
			l.cancel(id)
			return err
		}
	}
}

// cancel forgets call id and tells the guest, on a goroutine of its own:
// the caller returns at once even when the guest does not read.
func (l *hostLane) cancel(id uint32) {
	l.forget(id)
	go l.conn.writeCall(appendFrame(nil, kindCancel, id, nil))
}

// deliver hands the frames of a chunk from the guest to their call. A
// frame past its bound fails its call, and the rest of the chunk, which
// is that call's, is dropped; frames of no call (one cancelled since) are
// dropped.
func (l *hostLane) deliver(b []byte) error {
	var cur *laneCall
	limit := func(k byte, id uint32) int {
		l.mu.Lock()
		cur = l.calls[id]
		l.mu.Unlock()
		if cur == nil {
			return skip
		}
		switch k {
		case kindMessage:
			return max(cur.maxRecv, 0)
		case kindHeader, kindTrailer:
			return MaxMetadata
		}
		return 0
	}
	for len(b) > 0 {
		kind, id, p, rest, err := nextFrame(b, limit)
		if err != nil {
			if cur != nil {
				l.forget(id)
				cur.send(laneFrame{err: frameError(err, cur.maxRecv)})
			}
			return nil
		}
		b = rest
		if cur == nil {
			continue
		}
		if kind == kindTrailer {
			l.forget(id) // the call's answer is complete
		}
		cur.send(laneFrame{kind: kind, p: p})
	}
	return nil
}

// send hands f to the call, unless it holds laneFrames already: it then
// has a frame out of place, and fails on it.
func (lc *laneCall) send(f laneFrame) {
	select {
	case lc.frames <- f:
	default:
	}
}

// frameError is the status of a call whose answer had a bad frame.
func frameError(err error, maxRecv int) error {
	if fe := (*errFrameTooLarge)(nil); errors.As(err, &fe) && fe.kind == kindMessage {
		return status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", fe.size, maxRecv)
	}
	return status.Errorf(codes.Internal, "the guest answered with %v", err)
}

// end fails every call waiting when the connection ends.
func (l *hostLane) end(err error) {
	l.mu.Lock()
	calls := l.calls
	l.calls, l.err = make(map[uint32]*laneCall), err
	l.mu.Unlock()
	ferr := status.Errorf(codes.Unavailable, "the guest's connection: %v", err)
	if errors.Is(err, io.EOF) {
		ferr = status.Error(codes.Internal, "the guest ended the connection without a status for the call")
	}
	for _, lc := range calls {
		lc.send(laneFrame{err: ferr})
	}
}

// parseTrailer reads a trailer frame: the status and trailer metadata.
func parseTrailer(p []byte) (*status.Status, metadata.MD, error) {
	d := decoder{b: p}
	sp, md := d.string(), d.md()
	if d.err != nil {
		return nil, nil, status.Errorf(codes.Internal, "the guest sent a bad trailer: %v", d.err)
	}
	st, err := decodeStatus(sp)
	return st, md, err
}
