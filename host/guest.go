package host

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/guestconn"
	"github.com/plugkit/plugkit/internal/hostwire"
)

// A GuestRunner is a Runner that runs a plugin inside the host's process
// rather than as a process of its own: package wasmhost's Runtime runs
// WebAssembly (wasip1) modules. With one as Command.Runner, Start runs a
// Command.Path that is a WebAssembly module (it starts with "\0asm") through StartGuest
// and gives the same Client, handshake and errors as for a binary; the
// runner's Prepare is called for any other file (wasmhost refuses them).
//
// The guest gets no sockets: it writes its handshake line on its standard
// output, and then talks to the host over the one connection its runner
// gives it (Guest.Conn), an in-memory one, on which the host always
// multiplexes the broker (Command.MultiplexBroker is implied). TLS is not
// used on that connection: it never leaves the process (Options.Security's
// AutoMTLS does not apply; host.TLS still does, for a guest that serves
// its own).
type GuestRunner interface {
	Runner
	// StartGuest starts the guest the spec names and returns at once;
	// the guest runs until it exits or is stopped. ctx bounds only the
	// start.
	StartGuest(ctx context.Context, spec GuestSpec) (Guest, error)
}

// GuestSpec is one start of a guest, as Start hands it to a GuestRunner.
type GuestSpec struct {
	// Path is the module's file; Args its arguments after its name.
	Path string
	// Module is the module's content when Command.SHA256 pins it: Start
	// read it and checked it, so run this, not the file again. It is nil
	// for an unpinned module: the runner reads Path (and may skip that
	// when the file is unchanged since it last read it).
	Module []byte
	Args   []string
	// Env is the guest's whole environment: the handshake variables,
	// Command.Env, and the host's variables Command.InheritEnv names
	// (for a guest, nil names none).
	Env []string
	// Stdout and Stderr are the guest's standard output, which carries
	// its handshake line, and standard error, its logs: the host's ends
	// of pipes. Its standard input is empty; its connection to the host
	// is Guest.Conn.
	Stdout *os.File
	Stderr *os.File
}

// Guest is a plugin running inside the host's process.
type Guest interface {
	// Conn is the host's end of the guest's one connection, whose other
	// end the guest serves on; closing it ends the guest's waits for
	// input at once.
	Conn() net.Conn
	// Done is closed once the guest has ended; Err then says how (nil
	// after it returned or exited with status 0).
	Done() <-chan struct{}
	Err() error
	// Stop ends the guest at once, for cause, even one waiting for
	// input; it is safe to call again and after the guest ended.
	Stop(cause error)
	// CPUBudget is how long the guest may keep its one thread busy
	// without answering the host's health check; past it, the host stops
	// it (a call that spins forever). 0 means no bound.
	CPUBudget() time.Duration
}

// ErrWasmNeedsRuntime reports a WebAssembly module started without a
// runtime for it.
var ErrWasmNeedsRuntime = errors.New("it is a WebAssembly module: set Command.Runner to a runtime for it (wasmhost.New), or give the path of a native binary")

// guestEnv is the environment of a guest: the handshake variables, the
// command's own and only the host's variables InheritEnv names; describe
// asks only for its description (handshake.EnvDescribe).
func guestEnv(cmd Command, versions []int, describe bool) []string {
	var hostEnv []string
	if cmd.InheritEnv != nil {
		hostEnv = inherited(cmd, os.Environ())
	}
	env := handshake.Env{Cookie: cmd.Cookie, Versions: versions, Multiplex: true, Describe: describe}
	return slices.Concat(hostEnv, cmd.Env, env.Environ())
}

// startWasm starts cmd as a guest when it is a WebAssembly module, and
// reports whether it is one.
func (c *Client) startWasm(ctx context.Context, cmd Command) (bool, error) {
	gr, isGuestRunner := cmd.Runner.(GuestRunner)
	if !hostwire.IsWasm(cmd.Path) {
		return false, nil
	}
	if !isGuestRunner {
		return true, &StartError{Name: c.name, Err: fmt.Errorf("%s: %w", cmd.Path, ErrWasmNeedsRuntime)}
	}
	return true, c.startGuest(ctx, cmd, gr)
}

// startGuest is start's work for a module run by gr.
func (c *Client) startGuest(ctx context.Context, cmd Command, gr GuestRunner) error {
	c.multiplex = true
	module, err := readPinnedModule(cmd.Path, cmd.SHA256)
	if err != nil {
		if ce := (*ChecksumError)(nil); errors.As(err, &ce) {
			c.rep.report(Event{Type: EventPinRefused, Cause: ce})
		}
		return &StartError{Name: c.name, Err: err}
	}
	g, err := newGuestPipes(c)
	if err != nil {
		return &StartError{Name: c.name, Err: err}
	}
	env := guestEnv(cmd, c.opts.Versions, c.describe)
	if !c.opts.Telemetry.traced() {
		// Calls without HTTP/2, if the guest can; a traced host keeps
		// HTTP/2, where its stats handler sees each call.
		env = append(env, guestconn.EnvCalls+"=1")
	}
	guest, err := gr.StartGuest(ctx, GuestSpec{Path: cmd.Path, Module: module, Args: cmd.Args, Env: env, Stdout: g.outW, Stderr: g.errW})
	if err != nil {
		g.closeGuestEnds()
		g.closeHostEnds()
		return &StartError{Name: c.name, Err: err}
	}
	g.conn = guest.Conn()
	// The runtime uses the guest's ends until the guest ends; closing
	// them then ends the host's reads.
	go func() {
		<-guest.Done()
		g.closeGuestEnds()
	}()
	life := &guestLife{pipes: g, guest: guest, name: c.name, stopWait: stopTimeout(cmd.Timeouts.Stop)}
	c.life = life
	text, err := life.readHandshake(ctx, cmp.Or(cmd.Timeouts.Start, hostwire.DefaultStartTimeout))
	if err == nil && c.describe && handshake.IsDescribeLine(text) {
		err = c.finishDescribedGuest(ctx, life, text)
		if err == nil {
			return nil
		}
	} else if err == nil {
		err = c.connectGuest(ctx, life, text)
	}
	if err != nil {
		return life.fail(c.name, err)
	}
	c.ready = time.Since(c.started)
	c.rep.report(Event{Type: EventReady, Major: c.line.AppVersion, Duration: c.ready})
	go life.watch(c)
	return nil
}

// connectGuest checks the guest's handshake line (text) and connects over
// the guest's connection.
func (c *Client) connectGuest(ctx context.Context, life *guestLife, text string) error {
	line, err := handshake.Parse(text)
	if err != nil {
		return err
	}
	if !slices.Contains(c.opts.Versions, line.AppVersion) {
		return &handshake.VersionError{Plugin: []int{line.AppVersion}, Host: c.opts.Versions}
	}
	if !(line.HasMultiplex && line.Multiplex) {
		return ErrMultiplexNotSupported
	}
	c.rep.report(Event{Type: EventStarted, Major: line.AppVersion})
	tlsConfig, err := clientTLS(nil, c.opts.Security.ownTLS(), line)
	if err != nil {
		return err
	}
	// A guest that serves calls without HTTP/2 says so in its address
	// (only when asked: guestconn.EnvCalls).
	c.guestCalls = line.Address == guestconn.CallsAddress && !c.opts.Telemetry.traced()
	line.Network, line.Address = guestconn.Network, c.rep.binary
	c.line = line
	c.rawDial = life.pipes.dial
	return c.connect(ctx, tlsConfig)
}

// guestPipes are the pipes of a guest's standard output and error, and
// its connection.
type guestPipes struct {
	conn       net.Conn // the host's end of the guest's connection
	outR, outW *os.File // the guest writes outW
	errR, errW *os.File
	stdout     *bufio.Reader
	stderr     *logSink
	stderrDone chan struct{}
	lineCh     chan lineResult
	dialed     bool
}

func newGuestPipes(c *Client) (*guestPipes, error) {
	var fs [4]*os.File
	for i := 0; i < len(fs); i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range fs[:i] {
				f.Close()
			}
			return nil, err
		}
		fs[i], fs[i+1] = r, w
	}
	g := &guestPipes{outR: fs[0], outW: fs[1], errR: fs[2], errW: fs[3],
		stderr: &logSink{logger: c.logger, source: "stderr"}, stderrDone: make(chan struct{}), lineCh: make(chan lineResult, 1)}
	g.stdout = bufio.NewReader(g.outR)
	go func() {
		defer close(g.stderrDone)
		g.stderr.consume(g.errR)
	}()
	go func() {
		line, complete, err := readLine(g.stdout, maxHandshakeLine)
		g.lineCh <- lineResult{line, complete, err}
		// Past its handshake line, a guest's standard output is logs
		// (plugin.Serve sends os.Stdout to standard error anyway).
		if err == nil {
			(&logSink{logger: c.logger, source: "stdout"}).consume(g.stdout)
		}
	}()
	return g, nil
}

// closeGuestEnds closes the guest's ends, once the guest has ended.
func (g *guestPipes) closeGuestEnds() {
	g.outW.Close()
	g.errW.Close()
}

// closeHostEnds closes the host's ends: a guest waiting for input reads
// the end of it, and one writing gets an error.
func (g *guestPipes) closeHostEnds() {
	if g.conn != nil {
		g.conn.Close()
	}
	g.outR.Close()
}

// waitStderr waits, briefly, for the guest's standard error to end.
func (g *guestPipes) waitStderr() {
	select {
	case <-g.stderrDone:
	case <-time.After(drainTimeout):
	}
}

// dial returns the guest's connection. There is one.
func (g *guestPipes) dial(context.Context, string) (net.Conn, error) {
	if g.dialed {
		return nil, errors.New("the guest's one connection is in use")
	}
	g.dialed = true
	return &pipeConn{Conn: g.conn, closer: g.closeHostEnds}, nil
}

// pipeConn is a guest's connection as the host uses it: closing it
// closes the guest's standard output too.
type pipeConn struct {
	net.Conn
	closer func()
}

func (c *pipeConn) Close() error { c.closer(); return nil }

// guestExitState says how a guest ended, in ExitError's words.
func guestExitState(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return strings.TrimPrefix(err.Error(), "module closed with ")
}

// errHandshakeTimeout is the message of a guest that wrote no handshake.
func errHandshakeTimeout(timeout time.Duration) error {
	return fmt.Errorf("no complete handshake line within %v: is it built with plugkit's plugin.Serve for GOOS=wasip1, and is the cookie right?", timeout)
}

// readPinnedModule reads a guest's module, checked against the pin, when
// there is one; the runner reads an unpinned one.
func readPinnedModule(path, pin string) ([]byte, error) {
	if pin == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, pin) {
		return nil, &ChecksumError{Path: path, Want: strings.ToLower(pin), Got: got}
	}
	return b, nil
}

// guestCallOptions carry the calls to a guest that serves them without
// HTTP/2 (internal/guestcall) over streams of its multiplexed connection:
// the innermost interceptors, after the host's own. Nil for any other
// plugin.
func (c *Client) guestCallOptions() []grpc.DialOption {
	if c.calls == nil || c.mux == nil {
		return nil
	}
	return c.calls.DialOptions(c.mux.Open)
}

// guestDialOptions fix the flow-control windows of a guest's connection
// (guestconn.Window), as the guest fixes its own: grpc-go's bandwidth
// estimation would PING the guest after every answer; none for a
// plugin process.
func guestDialOptions(guest bool) []grpc.DialOption {
	if !guest {
		return nil
	}
	return []grpc.DialOption{grpc.WithInitialWindowSize(guestconn.Window), grpc.WithInitialConnWindowSize(guestconn.Window)}
}
