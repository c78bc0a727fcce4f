package host

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestHandshakeLineOutlivesTheExit: a plugin that writes its line and
// exits at once (a describing plugin does) has its line taken, however
// late the goroutine reading stdout hands it over: on a loaded machine
// the exit can be seen first, and the host once gave the reader 100 ms,
// then reported "exited before its handshake (exit status 0)". The
// process here has exited (status 0) before the line comes, 300 ms
// later.
func TestHandshakeLineOutlivesTheExit(t *testing.T) {
	const line = "1|1|unix|/nowhere|grpc"
	exited := exec.Command(os.Args[0], "-test.run=^$")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: exited, state: exited.ProcessState, exited: make(chan struct{}), stderrDone: make(chan struct{}), lineCh: make(chan lineResult, 1)}
	close(p.exited)
	close(p.stderrDone)
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
