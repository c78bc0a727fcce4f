package guestcall

import (
	"bufio"
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

// LaneMagic opens a lane: one stream of the connection that carries
// every unary call, told apart by their IDs, so that a unary call costs
// the connection no stream of its own to open and close. Only unary
// calls ride it: an answer is one message, which the host's reader takes
// at once, so no call waits on another's flow control.
const LaneMagic = "PKL1"

// errSecondMessage fails a unary call sent more than one message.
var errSecondMessage = status.Error(codes.Internal, "grpc: a unary call sent more than one request message")

// lockedWriter serialises the writes of a lane's calls: each Write is
// one call's whole frames.
type lockedWriter struct {
	mu sync.Mutex
	w  net.Conn
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// serveLane serves the unary calls of the lane c, each on a goroutine of
// its own, until the host ends the lane.
func (s *Server) serveLane(c net.Conn, br *bufio.Reader) {
	defer c.Close()
	w := &lockedWriter{w: c}
	var mu sync.Mutex
	calls := make(map[uint32]*serverStream)
	ctx, cancelAll := context.WithCancel(s.ctx)
	defer cancelAll()
	lookup := func(id uint32) *serverStream {
		mu.Lock()
		defer mu.Unlock()
		return calls[id]
	}
	limit := func(k byte, id uint32) int {
		switch k {
		case kindCall:
			return MaxMetadata
		case kindMessage:
			return max(s.parts.maxRecv, 1)
		case kindEnd, kindCancel:
			return 1
		}
		return 0
	}
	pr := &peer.Peer{Addr: c.RemoteAddr(), LocalAddr: c.LocalAddr()}
	for {
		kind, id, p, err := readFrame(br, limit)
		if fe := (*errFrameTooLarge)(nil); errors.As(err, &fe) && kind == kindMessage {
			// Past the server's limit: that call fails, the lane goes on.
			if st := lookup(id); st != nil {
				st.fail(status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", fe.size, s.parts.maxRecv))
			}
			if _, err = br.Discard(int(fe.size)); err == nil {
				continue
			}
		}
		if err != nil {
			return // the lane ended: cancelAll ends its calls
		}
		switch kind {
		case kindCall:
			d := decoder{b: p}
			method, timeout, md := d.string(), int64(d.uvarint()), d.md()
			if d.err != nil || lookup(id) != nil || !s.begin() {
				return
			}
			cctx, cancel := context.WithCancel(ctx)
			if timeout > 0 {
				cctx, cancel = withTimeout(cctx, cancel, time.Duration(timeout))
			}
			st := &serverStream{s: s, conn: w, id: id, method: method, msgs: make(chan []byte, 1), cancel: cancel}
			cctx = metadata.NewIncomingContext(cctx, md)
			cctx = peer.NewContext(cctx, pr)
			st.ctx = grpc.NewContextWithServerTransportStream(cctx, transportStream{st})
			mu.Lock()
			calls[id] = st
			mu.Unlock()
			go func() {
				defer s.calls.Done()
				st.finish(s.dispatch(st))
				mu.Lock()
				delete(calls, id)
				mu.Unlock()
				cancel()
			}()
		case kindMessage:
			if st := lookup(id); st != nil {
				select {
				case st.msgs <- p:
				default: // a second message of a unary call
					st.fail(errSecondMessage)
				}
			}
		case kindEnd:
			if st := lookup(id); st != nil {
				st.endOnce.Do(func() { close(st.msgs) })
			}
		case kindCancel:
			if st := lookup(id); st != nil {
				st.cancel()
			}
		}
	}
}

// withTimeout bounds ctx by timeout; the returned cancel ends both.
func withTimeout(ctx context.Context, cancel context.CancelFunc, timeout time.Duration) (context.Context, context.CancelFunc) {
	tctx, cancelT := context.WithTimeout(ctx, timeout)
	return tctx, func() {
		cancelT()
		cancel()
	}
}
