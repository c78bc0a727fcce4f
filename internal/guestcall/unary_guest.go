package guestcall

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Wrap returns the connection the guest's session is to run on: raw,
// from which the host's unary calls are taken out and served, each on a
// worker goroutine (kept for later calls: a new goroutine's stack grows
// by copying, which a single-threaded guest pays for in full).
func (s *Server) Wrap(raw net.Conn) net.Conn {
	u := &unaryCalls{s: s, live: make(map[uint32]*serverStream), peer: &peer.Peer{Addr: raw.RemoteAddr(), LocalAddr: raw.LocalAddr()}}
	u.conn = newConn(raw, max(s.parts.maxRecv, 0)+2*MaxMetadata+4*frameHeader, u.serve, u.end)
	return u.conn
}

// unaryCalls are the unary calls of one connection.
type unaryCalls struct {
	s    *Server
	conn *Conn
	peer *peer.Peer
	mu   sync.Mutex
	live map[uint32]*serverStream
	idle chan func() // workers waiting for a call
	once sync.Once
}

// serve takes a chunk of frames from the host: a call (its call frame,
// message and end), or a cancel.
func (u *unaryCalls) serve(b []byte) error {
	limit := func(k byte, _ uint32) int {
		switch k {
		case kindCall:
			return MaxMetadata
		case kindMessage:
			return max(u.s.parts.maxRecv, 1)
		case kindEnd, kindCancel:
			return 1
		}
		return 0
	}
	var st *serverStream
	for len(b) > 0 {
		kind, id, p, rest, err := nextFrame(b, limit)
		if fe := (*errFrameTooLarge)(nil); errors.As(err, &fe) && kind == kindMessage && st != nil {
			st.fail(status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", fe.size, u.s.parts.maxRecv))
			return nil // the rest of the chunk is this call's end
		}
		if err != nil {
			return err
		}
		b = rest
		switch kind {
		case kindCall:
			if st, err = u.start(id, p); err != nil {
				return err
			}
		case kindMessage:
			if st == nil || st.id != id {
				return errors.New("guestcall: a message outside its call")
			}
			select {
			case st.msgs <- p:
			default:
				st.fail(errSecondMessage)
			}
		case kindEnd:
			if st != nil && st.id == id {
				st.endOnce.Do(func() { close(st.msgs) })
			}
		case kindCancel:
			u.mu.Lock()
			c := u.live[id]
			u.mu.Unlock()
			if c != nil {
				c.cancel()
			}
		}
	}
	return nil
}

// errSecondMessage fails a unary call sent more than one message.
var errSecondMessage = status.Error(codes.Internal, "grpc: a unary call sent more than one request message")

// start begins call id, whose call frame is p, on a worker.
func (u *unaryCalls) start(id uint32, p []byte) (*serverStream, error) {
	d := decoder{b: p}
	method, timeout, md := d.string(), int64(d.uvarint()), d.md()
	if d.err != nil {
		return nil, d.err
	}
	if !u.s.begin() {
		return nil, errors.New("guestcall: the server is shut down")
	}
	ctx, cancel := context.WithCancel(u.s.ctx)
	if timeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(ctx, time.Duration(timeout))
		cancel = both(cancelT, cancel)
	}
	st := &serverStream{s: u.s, conn: callWriter{u.conn}, id: id, method: method, msgs: make(chan []byte, 1), cancel: cancel}
	ctx = metadata.NewIncomingContext(ctx, md)
	ctx = peer.NewContext(ctx, u.peer)
	st.ctx = grpc.NewContextWithServerTransportStream(ctx, transportStream{st})
	u.mu.Lock()
	u.live[id] = st
	u.mu.Unlock()
	u.run(func() {
		st.finish(u.s.dispatch(st))
		u.mu.Lock()
		delete(u.live, id)
		u.mu.Unlock()
		cancel()
		u.s.calls.Done()
	})
	return st, nil
}

// run runs f on an idle worker, or on a new one.
func (u *unaryCalls) run(f func()) {
	u.once.Do(func() { u.idle = make(chan func()) })
	select {
	case u.idle <- f:
	default:
		go u.work(f)
	}
}

func (u *unaryCalls) work(f func()) {
	for {
		f()
		var ok bool
		if f, ok = <-u.idle; !ok {
			return
		}
	}
}

// end ends the calls of a connection that ended, and their workers.
func (u *unaryCalls) end(error) {
	u.mu.Lock()
	for _, st := range u.live {
		st.cancel()
	}
	u.mu.Unlock()
	u.once.Do(func() { u.idle = make(chan func()) })
	close(u.idle)
}

func both(a, b context.CancelFunc) context.CancelFunc {
	return func() {
		a()
		b()
	}
}
