package host

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/plugkit/plugkit/internal/osdep"
)

// maxHandshakeLine bounds the first line read from a plugin.
const maxHandshakeLine = 16 << 10

// drainTimeout bounds the wait for a dead plugin's pipes to close (a
// grandchild may hold them open).
const drainTimeout = time.Second

// process is a launched plugin process and its output pipes.
type process struct {
	cmd    *exec.Cmd
	sys    sysProc // the plugin's job object on Windows
	stdout *bufio.Reader
	outR   *os.File
	errR   *os.File
	stderr *logSink

	exited  chan struct{} // closed after Wait returns
	state   *os.ProcessState
	waitErr error
	cause   error // what Launch.Exited made of the exit, if anything

	forwarding bool   // forwardStdout was started
	outLocks   bool   // outR is the socket directory's lock, which closes it (sockDir.stdout)
	stopStdout func() // ends the poller's watch of stdout, if it has one
	// afterExit, when set, runs once after exited is closed (whenExited).
	afterExit  atomic.Pointer[func()]
	stderrDone chan struct{}
	stdoutDone chan struct{}
	lineCh     chan lineResult
}

type lineResult struct {
	line     string
	complete bool
	err      error
}

// startProcess starts cmd with its output read by the host: stderr is
// logged and copied to stderrCopy; onExit, when set, is called once the
// process has exited, and, with drainFirst, once its stderr has ended too.
// stdout is the pipe for the plugin's standard output, when the socket
// directory's lock is its read end (sockDir.stdout), which the directory
// closes; with nil ends, a pipe of its own.
func startProcess(cmd *exec.Cmd, logger *slog.Logger, stderrCopy io.Writer, drainFirst bool, onExit func(*os.ProcessState) error, stdout [2]*os.File) (*process, error) {
	outR, outW, outLocks := stdout[0], stdout[1], stdout[0] != nil
	closeOut := func() {
		if !outLocks {
			outR.Close()
		}
		outW.Close()
	}
	var err error
	if !outLocks {
		if outR, outW, err = os.Pipe(); err != nil {
			return nil, err
		}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeOut()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	setProcAttr(cmd)
	sys, err := startCmd(cmd)
	if err != nil {
		closeOut()
		errR.Close()
		errW.Close()
		return nil, err
	}
	outW.Close()
	errW.Close()
	p := &process{
		cmd:        cmd,
		sys:        sys,
		stdout:     bufio.NewReader(outR),
		outR:       outR,
		outLocks:   outLocks,
		errR:       errR,
		stderr:     &logSink{logger: logger, source: "stderr", copy: stderrCopy},
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
		stdoutDone: make(chan struct{}),
		lineCh:     make(chan lineResult, 1),
	}
	go func() {
		defer close(p.stderrDone)
		defer errR.Close()
		p.stderr.consume(errR)
	}()
	reapWhenExited(cmd.Process, func() {
		p.waitErr = cmd.Wait()
		p.state = cmd.ProcessState
		if drainFirst {
			p.waitStderr()
		}
		if onExit != nil {
			p.cause = onExit(p.state)
		}
		close(p.exited)
		if f := p.afterExit.Swap(nil); f != nil {
			(*f)()
		}
	})
	go func() {
		line, complete, err := readLine(p.stdout, maxHandshakeLine)
		p.lineCh <- lineResult{line, complete, err}
	}()
	return p, nil
}

// whenExited has f run once the process has exited: by the goroutine
// that reaped it, with no goroutine of its own waiting meanwhile, or here
// when it has exited already. f runs once.
func (p *process) whenExited(f func()) {
	p.afterExit.Store(&f)
	select {
	case <-p.exited:
		if f := p.afterExit.Swap(nil); f != nil {
			(*f)()
		}
	default:
	}
}

// stderrCopy is where the plugin's stderr is copied besides the host's
// log: the Command's writer (Output.Stderr), the runner's
// (Launch.Stderr), both, or neither.
func stderrCopy(command, runner io.Writer) io.Writer {
	switch {
	case command == nil:
		return runner
	case runner == nil:
		return command
	}
	return bothWriters{command, runner}
}

// bothWriters writes to both, whatever either answers (io.MultiWriter
// stops at the first error).
type bothWriters [2]io.Writer

func (w bothWriters) Write(p []byte) (int, error) {
	w[0].Write(p)
	w[1].Write(p)
	return len(p), nil
}

// readHandshake waits for the first stdout line.
func (p *process) readHandshake(ctx context.Context, timeout time.Duration, name string) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-p.lineCh:
		if r.complete {
			return r.line, nil
		}
		if r.err != nil && !errors.Is(r.err, io.EOF) {
			return "", fmt.Errorf("reading the handshake: %w", r.err)
		}
		// stdout closed: the plugin exited (or closed stdout) first.
		select {
		case <-p.exited:
		case <-time.After(drainTimeout):
			return "", fmt.Errorf("plugin closed its stdout without a handshake line (got %q)", r.line)
		}
		return "", p.exitError(name)
	case <-p.exited:
		if r, ok := lineAfterEnd(ctx, p.lineCh); ok {
			if r.complete {
				return r.line, nil
			}
			if r.err != nil && !errors.Is(r.err, io.EOF) {
				return "", fmt.Errorf("reading the handshake: %w", r.err)
			}
		}
		return "", p.exitError(name)
	case <-t.C:
		return "", fmt.Errorf("no complete handshake line within %v: is it a go-plugin gRPC plugin, and is the cookie right? "+
			"A plugin that wrote its line but did not flush its standard output looks exactly like this "+
			"(stdout to a pipe is block-buffered in Python, C and others): flush after the handshake line", timeout)
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for the handshake: %w", ctx.Err())
	}
}

// lineAfterEnd waits for what stdout's reader hands over after the
// plugin's end was seen: a line printed just before the end can come
// later than the end (a loaded machine delays the reader for any time).
// The read ends when stdout closes; the wait is bounded by drainTimeout,
// for a grandchild that holds the pipe open, and by ctx. ok is false when
// nothing came.
func lineAfterEnd(ctx context.Context, lineCh <-chan lineResult) (r lineResult, ok bool) {
	t := time.NewTimer(drainTimeout)
	defer t.Stop()
	select {
	case r = <-lineCh:
		return r, true
	case <-t.C:
	case <-ctx.Done():
	}
	return r, false
}

func (p *process) exitError(name string) error {
	p.waitStderr()
	return &ExitError{Name: name, State: p.state.String(), Cause: p.cause, Panic: p.panicked(name)}
}

// panicked is the Go panic the process died of: one its stderr reported
// with a stack, and the Go runtime's exit status 2. A "panic:" line the
// plugin wrote while living on is not one.
func (p *process) panicked(name string) *PanicError {
	if p.state == nil || p.state.ExitCode() != 2 {
		return nil
	}
	return p.stderr.panicError(name)
}

// exitEvent is the event of the process's exit.
func (p *process) exitEvent(unexpected bool, cause error) Event {
	e := Event{Type: EventExited, Pid: p.cmd.Process.Pid, Unexpected: unexpected, Cause: cause}
	if p.state != nil {
		e.Status = p.state.String()
		e.Signal, _ = strings.CutPrefix(e.Status, "signal: ")
		if e.Signal == e.Status {
			e.Signal = ""
		}
	}
	return e
}

func (p *process) waitStderr() {
	select {
	case <-p.stderrDone:
	case <-time.After(drainTimeout):
		p.errR.Close()
		<-p.stderrDone
	}
}

// forwardStdout has whatever the plugin writes straight to its stdout
// file descriptor after the handshake logged: by the poller of all
// plugins' pipes where there is one (Linux), else by a goroutine of its
// own.
func (p *process) forwardStdout(logger *slog.Logger) {
	p.forwarding = true
	sink := newLogSink(logger, "stdout")
	// What the handshake's reader read past its line.
	first, _ := p.stdout.Peek(p.stdout.Buffered())
	if stop, ok := watchPipe(p.outR, first, sink, p.stdoutDone); ok {
		p.stopStdout = stop
		return
	}
	go func() {
		defer close(p.stdoutDone)
		sink.consume(p.stdout)
	}()
}

// failGrace is how long a plugin that failed to start gets to exit after
// SIGTERM (and remove its socket directory) before SIGKILL.
const failGrace = 500 * time.Millisecond

// kill ends the process and reaps it: SIGTERM, so that a plugin that
// can clean up does, then SIGKILL after failGrace (on Windows, which has
// no SIGTERM, the kill at once).
func (p *process) kill() {
	escalate(stopPlan(nil, p.terminate, p.forceKill, failGrace, osdep.Graceful), p.exitedWithin)
	p.killGroup()
	p.closePipes()
}

func (p *process) closePipes() {
	p.waitStderr()
	if p.forwarding {
		select {
		case <-p.stdoutDone:
		case <-time.After(drainTimeout):
			if p.stopStdout != nil {
				p.stopStdout()
			}
			p.outR.Close()
			<-p.stdoutDone
		}
	}
	if !p.outLocks {
		p.outR.Close()
	}
}

// Stop stages, as stop reports them.
const (
	stoppedAsked   = iota // exited after ask, within the first wait
	stoppedSIGTERM        // exited after SIGTERM
	stoppedSIGKILL        // had to be killed
)

// stop ends the process in steps, each bounded by wait: whatever ask does
// (the Shutdown RPC) and the wait for the exit after it share the first
// wait, which ends at once when ask reports that the plugin will not stop
// on its own; then SIGTERM and a wait; then SIGKILL. The total stays within two
// waits plus the kill. On Windows, which has no SIGTERM, the kill follows
// the first wait. It reports the stage the process exited at.
func (p *process) stop(ask func() (willExit bool), wait time.Duration) (stage int) {
	stage = escalate(stopPlan(ask, p.terminate, p.forceKill, wait, osdep.Graceful), p.exitedWithin)
	p.killGroup()
	p.closePipes()
	return stage
}

// exitedWithin reports whether the process exits within d; a negative d
// waits as long as it takes.
func (p *process) exitedWithin(d time.Duration) bool {
	if d < 0 {
		<-p.exited
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}
