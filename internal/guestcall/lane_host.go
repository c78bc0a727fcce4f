package guestcall

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// hostLane is the host's end of the lane its unary calls share (see
// LaneMagic), opened at the first call and again after it fails.
type hostLane struct {
	c    *client
	wsem chan struct{} // held while a call writes

	mu     sync.Mutex // guards the rest
	conn   net.Conn   // nil until opened, and after it failed
	calls  map[uint32]*laneCall
	nextID uint32
}

// laneCall is a unary call on the lane, waiting for the guest's frames.
type laneCall struct {
	maxRecv int
	frames  chan laneFrame // the header, message, trailer; or an error
}

type laneFrame struct {
	kind byte
	p    []byte
	err  error
}

// laneFrames is how many frames a lane call holds: a good answer has at
// most three (header, message, trailer); the reader stops delivering at
// the trailer, and the call fails at the first frame out of place.
const laneFrames = 4

func newHostLane(c *client) *hostLane {
	return &hostLane{c: c, wsem: make(chan struct{}, 1), calls: make(map[uint32]*laneCall)}
}

// invoke makes a unary call on the lane.
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
	data, err := l.c.codec.Marshal(req)
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

	select {
	case l.wsem <- struct{}{}:
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
	conn, id, lc, opened, err := l.register(o.maxRecv)
	if err != nil {
		<-l.wsem
		return status.Errorf(codes.Unavailable, "opening the guest's lane: %v", err)
	}
	buf := make([]byte, 0, len(LaneMagic)+3*frameHeader+len(payload)+n)
	if opened {
		buf = append(buf, LaneMagic...)
	}
	buf = appendFrame(buf, kindCall, id, payload)
	buf = appendHead(buf, kindMessage, id, n)
	for _, b := range data {
		buf = append(buf, b.ReadOnlyData()...)
	}
	buf = appendFrame(buf, kindEnd, id, nil)
	err = l.write(ctx, conn, buf)
	<-l.wsem
	if err != nil {
		l.mu.Lock()
		delete(l.calls, id)
		l.mu.Unlock()
		if cerr := ctx.Err(); cerr != nil {
			return status.FromContextError(cerr).Err()
		}
		return status.Errorf(codes.Unavailable, "the guest's connection: %v", err)
	}
	if o.peer != nil {
		*o.peer = peer.Peer{Addr: conn.RemoteAddr(), LocalAddr: conn.LocalAddr()}
	}
	return l.wait(ctx, conn, id, lc, reply, o)
}

// register opens the lane if need be and adds a call to it.
func (l *hostLane) register(maxRecv int) (conn net.Conn, id uint32, lc *laneCall, opened bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		c, err := l.c.open()
		if err != nil {
			return nil, 0, nil, false, err
		}
		l.conn, opened = c, true
		go l.read(c)
	}
	l.nextID++
	if l.nextID == 0 {
		l.nextID = 1
	}
	lc = &laneCall{maxRecv: maxRecv, frames: make(chan laneFrame, laneFrames)}
	l.calls[l.nextID] = lc
	return l.conn, l.nextID, lc, opened, nil
}

// wait reads the call's answer from the frames the reader hands it.
func (l *hostLane) wait(ctx context.Context, conn net.Conn, id uint32, lc *laneCall, reply any, o callOptions) error {
	var header metadata.MD
	gotHeader, gotMsg := false, false
	for {
		var f laneFrame
		select {
		case f = <-lc.frames:
		case <-ctx.Done():
			l.cancel(conn, id)
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
			if uerr := l.c.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(f.p)}, reply); uerr != nil {
				err = status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", uerr)
			}
		case kindTrailer:
			st, trailer, terr := parseTrailer(f.p)
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
			l.cancel(conn, id)
			return err
		}
	}
}

// cancel forgets call id and tells the guest, unless the lane has failed
// since.
func (l *hostLane) cancel(conn net.Conn, id uint32) {
	l.mu.Lock()
	delete(l.calls, id)
	current := l.conn == conn
	l.mu.Unlock()
	if !current {
		return
	}
	select {
	case l.wsem <- struct{}{}:
	case <-time.After(time.Second): // a guest that stopped reading: the call ends anyway
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), time.Second)
	l.write(ctx, conn, appendFrame(nil, kindCancel, id, nil))
	stop()
	<-l.wsem
}

// write writes buf to the lane conn, holding wsem. A write waits only
// while the guest does not read its lane; when ctx ends first, a write
// that wrote nothing leaves the lane as it was, and one cut halfway
// fails the lane (its next frame would be read from the middle).
func (l *hostLane) write(ctx context.Context, conn net.Conn, buf []byte) error {
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		conn.SetWriteDeadline(time.Now())
		close(fired)
	})
	n, err := conn.Write(buf)
	if !stop() {
		<-fired
		conn.SetWriteDeadline(time.Time{})
	}
	if err != nil && n > 0 || err != nil && ctx.Err() == nil {
		l.fail(conn, err, 0)
	}
	return err
}

// read hands the guest's frames on conn to their calls until the lane
// fails.
func (l *hostLane) read(conn net.Conn) {
	br := bufio.NewReaderSize(conn, 32<<10)
	var cur *laneCall
	limit := func(k byte, id uint32) int {
		l.mu.Lock()
		cur = l.calls[id]
		l.mu.Unlock()
		if cur == nil {
			return skip // a call cancelled since, or no call
		}
		switch k {
		case kindMessage:
			return max(cur.maxRecv, 0)
		case kindHeader, kindTrailer:
			return MaxMetadata
		}
		return 0
	}
	for {
		kind, id, p, err := readFrame(br, limit)
		if fe := (*errFrameTooLarge)(nil); errors.As(err, &fe) && kind == kindMessage {
			// Past the call's limit: that call fails, the lane goes on.
			l.mu.Lock()
			delete(l.calls, id)
			l.mu.Unlock()
			select {
			case cur.frames <- laneFrame{err: status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", fe.size, cur.maxRecv)}:
			default:
			}
			if _, err = br.Discard(int(fe.size)); err == nil {
				continue
			}
		}
		if err != nil {
			l.fail(conn, err, id)
			return
		}
		if cur == nil {
			continue
		}
		if kind == kindTrailer {
			l.mu.Lock()
			delete(l.calls, id) // the call's answer is complete
			l.mu.Unlock()
		}
		select {
		case cur.frames <- laneFrame{kind: kind, p: p}:
		default: // the call has a frame out of place already, and fails on it
		}
	}
}

// fail ends the lane conn, if it is still the lane, and every call on it:
// call bad with what the guest sent, the others as unavailable.
func (l *hostLane) fail(conn net.Conn, err error, bad uint32) {
	l.mu.Lock()
	if l.conn != conn {
		l.mu.Unlock()
		return
	}
	calls := l.calls
	l.conn, l.calls = nil, make(map[uint32]*laneCall)
	l.mu.Unlock()
	conn.Close()
	for id, lc := range calls {
		var ferr error
		switch fe := (*errFrameTooLarge)(nil); {
		case id == bad && errors.As(err, &fe) && fe.kind == kindMessage:
			ferr = status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", fe.size, lc.maxRecv)
		case id == bad && !isConnErr(err) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF):
			ferr = status.Errorf(codes.Internal, "the guest answered with %v", err)
		case errors.Is(err, io.EOF):
			ferr = status.Error(codes.Internal, "the guest ended the call without a status")
		default:
			ferr = status.Errorf(codes.Unavailable, "the guest's connection: %v", err)
		}
		select {
		case lc.frames <- laneFrame{err: ferr}:
		default:
		}
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
