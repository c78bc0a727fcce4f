package guestconn

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"time"
)

// Dir is the directory the host mounts in a guest (a preopen of its
// own) to hold the guest's end of the connection, and Name the file in
// it: the guest opens Dir + "/" + Name, once.
const (
	Dir  = "/.plugkit"
	Name = "conn"
)

// Network is the network name of a guest's connection: the host's
// Client.ReattachConfig().Addr.Network, and both ends' addresses.
const Network = "stdio"

// EnvCalls, set to 1 in a guest's environment, says its host can send
// calls without HTTP/2 (package internal/guestcall); CallsAddress, the
// address in the handshake line of a guest that then does so, says the
// guest's connection carries them (unary calls beside its session, in
// chunks). A guest that says Network serves HTTP/2 alone, on the bare
// session.
const (
	EnvCalls     = "PLUGKIT_GUEST_CALLS"
	CallsAddress = Network + "+calls"
)

// Window is the HTTP/2 flow-control window, of each stream and of the
// connection, that a guest's gRPC server and its host's client both fix
// (grpc.InitialWindowSize and InitialConnWindowSize, and the client's
// WithInitialWindowSize and WithInitialConnWindowSize). A fixed window
// turns off grpc-go's bandwidth estimation, whose PING after each DATA
// frame cost a guest one more wake-up and write per unary call (3 waits
// for input and 3 writes per call, then 2 and 2); it is the size of one
// direction's buffer here, which the window cannot usefully pass.
const Window = bufLimit

// bufLimit is how much one direction holds before its writer waits for
// the reader, as a pipe's buffer does.
const bufLimit = 1 << 20

// ErrWouldBlock reports a TryRead that found nothing to read yet.
var ErrWouldBlock = errors.New("guestconn: nothing to read yet")

// ErrClosed reports a write to a closed connection, or one that waited
// for room and saw the connection close.
var ErrClosed = errors.New("guestconn: the connection is closed")

// Pipe is one connection: Host is the host's end, Guest the guest's.
// Closing either end closes both: the other end reads what is left and
// then io.EOF, and its writes fail.
type Pipe struct {
	toGuest, toHost half
	closeOnce       sync.Once
	hostEnd         *hostConn
}

// New returns a connected Pipe.
func New() *Pipe {
	p := &Pipe{}
	p.toGuest.init()
	p.toHost.init()
	p.hostEnd = &hostConn{p: p}
	return p
}

// Host is the host's end, a net.Conn whose reads wait for the guest.
func (p *Pipe) Host() net.Conn { return p.hostEnd }

// Close closes the connection: a guest waiting in WaitReadable, and a
// writer waiting for room, return at once.
func (p *Pipe) Close() error {
	p.closeOnce.Do(func() {
		p.toGuest.close()
		p.toHost.close()
	})
	return nil
}

// TryRead reads what the host has sent without waiting: ErrWouldBlock
// when there is nothing yet, io.EOF once closed and drained.
func (p *Pipe) TryRead(b []byte) (int, error) { return p.toGuest.tryRead(b) }

// WaitReadable waits until the guest has something to read (or the end
// of it) or timeout passes (a negative timeout waits for ever), and
// reports whether it is readable.
func (p *Pipe) WaitReadable(timeout time.Duration) bool { return p.toGuest.waitReadable(timeout) }

// Write sends b to the host, waiting while the host has a full buffer's
// worth still to read; ErrClosed once the connection is closed.
//
// A host goroutine woken by the write would run only once the writing
// goroutine (the guest's one thread) blocks, or after another processor
// steals it some microseconds later: Go queues a woken goroutine to run
// next on the waker's processor. Write yields then, so that the host
// reads the guest's answer while the guest goes on (on another processor
// when there is one).
func (p *Pipe) Write(b []byte) (int, error) {
	n, woke, err := p.toHost.write(b)
	if woke {
		runtime.Gosched()
	}
	return n, err
}

// half is one direction of a Pipe.
type half struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	closed  bool
	waiting bool          // someone waits on wake
	wake    chan struct{} // closed when buf or closed changes while waiting
}

func (h *half) init() { h.wake = make(chan struct{}) }

// changed wakes the waiters, and reports whether there were any; h.mu
// is held.
func (h *half) changed() bool {
	if !h.waiting {
		return false
	}
	close(h.wake)
	h.wake = make(chan struct{})
	h.waiting = false
	return true
}

// waitChan is the channel to wait on for the next change; h.mu is held.
func (h *half) waitChan() <-chan struct{} {
	h.waiting = true
	return h.wake
}

func (h *half) close() {
	h.mu.Lock()
	h.closed = true
	h.changed()
	h.mu.Unlock()
}

func (h *half) tryRead(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(b) == 0 {
		return 0, nil
	}
	if h.buf.Len() == 0 {
		if h.closed {
			return 0, io.EOF
		}
		return 0, ErrWouldBlock
	}
	n, _ := h.buf.Read(b)
	h.changed()
	return n, nil
}

// read waits until there is something to read, or the end of it.
func (h *half) read(b []byte) (int, error) {
	for {
		n, err := h.tryRead(b)
		if err != ErrWouldBlock {
			return n, err
		}
		h.waitReadable(-1)
	}
}

func (h *half) waitReadable(timeout time.Duration) bool {
	var timer <-chan time.Time
	for {
		h.mu.Lock()
		if h.buf.Len() > 0 || h.closed {
			h.mu.Unlock()
			return true
		}
		if timeout == 0 {
			h.mu.Unlock()
			return false
		}
		wake := h.waitChan()
		h.mu.Unlock()
		if timeout > 0 && timer == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-wake:
		case <-timer:
			return false
		}
	}
}

// write appends b, and reports whether it woke a reader.
func (h *half) write(b []byte) (n int, woke bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for !h.closed && h.buf.Len() >= bufLimit {
		wake := h.waitChan()
		h.mu.Unlock()
		<-wake
		h.mu.Lock()
	}
	if h.closed {
		return 0, false, ErrClosed
	}
	h.buf.Write(b)
	return len(b), h.changed(), nil
}

// hostConn is the host's end of a Pipe.
type hostConn struct{ p *Pipe }

func (c *hostConn) Read(b []byte) (int, error) { return c.p.toHost.read(b) }
func (c *hostConn) Write(b []byte) (int, error) {
	n, _, err := c.p.toGuest.write(b)
	return n, err
}
func (c *hostConn) Close() error { return c.p.Close() }

// The connection has no deadlines: the host's yamux session sets none,
// and closing it ends every wait.
func (c *hostConn) SetDeadline(time.Time) error      { return nil }
func (c *hostConn) SetReadDeadline(time.Time) error  { return nil }
func (c *hostConn) SetWriteDeadline(time.Time) error { return nil }
func (c *hostConn) LocalAddr() net.Addr              { return addr{} }
func (c *hostConn) RemoteAddr() net.Addr             { return addr{} }

// addr names the connection, as a guest's always was.
type addr struct{}

func (addr) Network() string { return Network }
func (addr) String() string  { return Network }
