//go:build wasip1

package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/guestcall"
	"github.com/plugkit/plugkit/internal/guestconn"
)

// A WebAssembly (wasip1) guest has no sockets of its own: its host, which
// runs it in-process, gives it one connection as a file (guestconn.Dir,
// guestconn.Name), which the guest makes its descriptor 0: wazero's
// poll_oneoff waits for input on descriptor 0 only. The guest writes the
// handshake line on standard output; then the connection carries the
// main gRPC connection and every brokered one, which the host always
// multiplexes (yamux). Standard error carries the guest's logs, as a
// process's does.

// errNeedsMultiplex reports a wasip1 guest whose host did not ask for
// multiplexing, which its single connection needs.
var errNeedsMultiplex = errors.New("a WebAssembly (wasip1) plugin serves the one connection its host gives it, so its host must multiplex it (" + handshake.EnvMultiplexGRPC + "=true): load it with plugkit's host.Start")

// runWithPlugkit is what to do when the guest's connection cannot be
// set up: the runtime is not the one it was built for.
const runWithPlugkit = "load it with plugkit's host.Start and a wasmhost.Runtime, of this plugin's plugkit release or later"

// errNoConn reports a guest started by something other than a plugkit
// host, which gives it no connection.
var errNoConn = errors.New("a plugkit WebAssembly (wasip1) plugin talks to its host over the connection plugkit's host gives it (" + guestconn.Dir + "/" + guestconn.Name + "), which this runtime does not: " + runWithPlugkit + " (older ones talked to guests over standard input and output)")

// guestStdio is the guest's connection to its host, made once.
var guestStdio = sync.OnceValues(newStdioListener)

// openListener returns the listener of the guest's one connection.
func openListener(env handshake.Env) (net.Listener, error) {
	if !env.Multiplex {
		return nil, errNeedsMultiplex
	}
	l, err := guestStdio()
	if err != nil {
		return nil, err
	}
	return l, nil
}

// handshakeOut is where the handshake line goes: standard output, ahead
// of the connection, which Accept hands out only once the line is out.
func handshakeOut() io.Writer {
	l, err := guestStdio()
	if err != nil {
		return os.Stdout // openListener failed already; not reached
	}
	return l.announcer()
}

// stdioListener hands out its one connection once the handshake line is
// written, and then blocks until closed.
type stdioListener struct {
	conn      *stdioConn
	wrap      func(net.Conn) net.Conn // set before the announcement: the connection carries calls beside the session
	announced chan struct{}
	announce  sync.Once
	accepted  sync.Once
	closed    chan struct{}
	closeOnce sync.Once
}

func newStdioListener() (*stdioListener, error) {
	conn, err := openConn()
	if err != nil {
		return nil, err
	}
	return &stdioListener{
		conn:      newStdioConn(conn, os.NewFile(1, "stdout")),
		announced: make(chan struct{}),
		closed:    make(chan struct{}),
	}, nil
}

// openConn opens the guest's connection and makes it descriptor 0, in
// place of standard input: wazero's poll_oneoff waits for input on
// descriptor 0 only (any other non-blocking one it reports ready at once,
// a busy loop). It is read through the runtime's poller, so that a read
// waiting for the host does not stall every other goroutine of the
// single-threaded guest.
func openConn() (*os.File, error) {
	// Standard input is one of the runtime's stdio descriptors, which
	// fd_renumber does not replace: close it first (the file then
	// usually opens as 0 anyway, the lowest free descriptor).
	syscall.Close(0)
	fd, err := syscall.Open(guestconn.Dir+"/"+guestconn.Name, syscall.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", errNoConn, err)
	}
	if fd != 0 {
		if errno := fdRenumber(int32(fd), 0); errno != 0 {
			syscall.Close(fd)
			return nil, fmt.Errorf("making the host connection descriptor 0: %w: %s", syscall.Errno(errno), runWithPlugkit)
		}
	}
	if err := syscall.SetNonblock(0, true); err != nil {
		return nil, fmt.Errorf("making the host connection non-blocking: %w: %s", err, runWithPlugkit)
	}
	return os.NewFile(0, guestconn.Name), nil
}

// fdRenumber is WASI's fd_renumber: it moves descriptor from to to,
// closing what to was.
//
//go:wasmimport wasi_snapshot_preview1 fd_renumber
//go:noescape
func fdRenumber(from, to int32) uint32

// announcer writes the handshake line to standard output and then lets
// Accept hand out the connection.
func (l *stdioListener) announcer() io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		n, err := l.conn.w.Write(p)
		l.announce.Do(func() { close(l.announced) })
		return n, err
	})
}

func (l *stdioListener) Accept() (net.Conn, error) {
	var conn net.Conn
	l.accepted.Do(func() { conn = l.conn })
	if conn == nil {
		<-l.closed
		return nil, net.ErrClosed
	}
	select {
	case <-l.announced:
		if l.wrap != nil {
			conn = l.wrap(conn)
		}
		return conn, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept; the connection it handed out stays open.
func (l *stdioListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *stdioListener) Addr() net.Addr { return stdioAddr{} }

// stdioAddr names the guest's connection. The handshake line says unix,
// which every host parses; a plugkit host knows better.
type stdioAddr struct{}

func (stdioAddr) Network() string { return "unix" }
func (stdioAddr) String() string  { return guestconn.Network }

// stdioConn is the host connection, r, as a net.Conn; w is standard
// output, which carries the handshake line only.
type stdioConn struct {
	r, w      *os.File
	closeOnce sync.Once
}

func newStdioConn(conn, stdout *os.File) *stdioConn {
	return &stdioConn{r: conn, w: stdout}
}

func (c *stdioConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *stdioConn) Write(p []byte) (int, error) { return c.r.Write(p) }

// Close closes both ends: the host sees the connection end.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		c.r.Close()
		c.w.Close()
	})
	return nil
}

func (c *stdioConn) LocalAddr() net.Addr                { return stdioAddr{} }
func (c *stdioConn) RemoteAddr() net.Addr               { return stdioAddr{} }
func (c *stdioConn) SetDeadline(t time.Time) error      { return c.r.SetDeadline(t) }
func (c *stdioConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }
func (c *stdioConn) SetWriteDeadline(t time.Time) error { return nil }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// capture sends what the plugin writes to os.Stdout to standard error
// instead, where the host reads it as log lines: a guest has no pipes of
// its own to read it back from and forward over the stdio service.
func (s *stdioServer) capture() (restore func(), err error) {
	old := os.Stdout
	os.Stdout = os.Stderr
	return func() { os.Stdout = old }, nil
}

// parentProbe cannot tell: a guest lives inside its host's process and
// ends with it.
func parentProbe(func(string) (string, bool)) (gone func() bool, release func()) {
	return nil, func() {}
}

// serveContext is Serve's context. A guest gets no signals, and must not
// wait for any: os/signal's receiver keeps a single-threaded guest's
// scheduler busy, which starves its reads of its connection.
func serveContext(Config) (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// platformServerOptions are the gRPC server options of a guest: a few
// stream workers serve calls on goroutines they keep, where grpc-go
// starts one per call otherwise, which Go's single-threaded wasm port
// pays for on every call. A call that finds every worker busy still gets
// a goroutine of its own, so a call that waits holds up no other. The
// flow-control windows are fixed (guestconn.Window), as the host fixes
// its own: no bandwidth-estimation PINGs to answer.
func platformServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.NumStreamWorkers(guestStreamWorkers),
		grpc.InitialWindowSize(guestconn.Window),
		grpc.InitialConnWindowSize(guestconn.Window),
	}
}

// splitCalls serves the host's call streams (internal/guestcall) beside
// HTTP/2 on ln, and returns the listener of what is left and the address
// that tells the host so; a server this path cannot serve as grpc-go
// would (stats handlers, a codec of its own) serves HTTP/2 alone.
func (p *hosted) splitCalls(ln net.Listener) (net.Listener, string) {
	if v, _ := p.h.LookupEnv(guestconn.EnvCalls); v != "1" {
		return ln, "" // a host that sends HTTP/2 only
	}
	calls, err := guestcall.NewServer(p.srv)
	if err != nil {
		p.logger.Debug("plugin serving its calls over HTTP/2 alone", "reason", err)
		return ln, ""
	}
	stdio, err := guestStdio()
	if err != nil {
		return ln, ""
	}
	p.calls = calls
	stdio.wrap = calls.Wrap
	return calls.Split(ln), guestconn.CallsAddress
}

// guestStreamWorkers is how many stream workers a guest keeps.
const guestStreamWorkers = 4

// atStart is nil: a guest has no host process of its own to watch.
var atStart *startWatch

// startWatch is the watch of the host begun at the start, which a guest
// never has.
type startWatch struct{}

func (*startWatch) claim(bool) (gone <-chan struct{}, unclaim func()) { return nil, func() {} }
