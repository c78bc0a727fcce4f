package host

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// exitedProcess is a plugin process that has exited (status 0) and whose
// stdout reader has not handed anything over yet.
func exitedProcess(t *testing.T) *process {
	t.Helper()
	exited := exec.Command(os.Args[0], "-test.run=^$")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: exited, state: exited.ProcessState, exited: make(chan struct{}), stderrDone: make(chan struct{}), lineCh: make(chan lineResult, 1)}
	close(p.exited)
	close(p.stderrDone)
	return p
}

// TestHandshakeLineOutlivesTheExit: a plugin that writes its line and
// exits at once (a describing plugin does) has its line taken, however
// late the goroutine reading stdout hands it over: on a loaded machine
// the exit can be seen first, and the host once gave the reader 100 ms,
// then reported "exited before its handshake (exit status 0)". The
// process here has exited before the line comes, 300 ms later.
func TestHandshakeLineOutlivesTheExit(t *testing.T) {
	const line = "1|1|unix|/nowhere|grpc"
	p := exitedProcess(t)
	go func() {
		time.Sleep(300 * time.Millisecond)
		p.lineCh <- lineResult{line: line, complete: true}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := p.readHandshake(ctx, time.Minute, "late")
	if err != nil || got != line {
		t.Fatalf("readHandshake: %q, %v; want %q", got, err, line)
	}
}

// TestHandshakeExitWithPipeHeld: a plugin that exits without its line and
// leaves a child holding its stdout open (its reader never ends) is
// reported as exited, with its exit status, after at most drainTimeout:
// neither waiting out the start timeout (a minute here) for a line that
// cannot come, nor hanging on the child until its caller gives up (the
// context here, 20 times drainTimeout).
func TestHandshakeExitWithPipeHeld(t *testing.T) {
	p := exitedProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*drainTimeout)
	defer cancel()
	_, err := p.readHandshake(ctx, time.Minute, "held")
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Name != "held" {
		t.Fatalf("readHandshake: %v; want the plugin's *ExitError", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("readHandshake returned the exit only once its context ended (%v), not after drainTimeout (%v)", ctx.Err(), drainTimeout)
	}
}
