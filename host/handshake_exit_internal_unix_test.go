//go:build unix

package host

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestHandshakeLineOutlivesTheExit: a plugin that writes its line and
// exits at once (a describing plugin does) has its line taken, however
// late the goroutine reading stdout gets to hand it over: on a loaded
// machine the exit can be seen first, and the host once gave the reader
// 100 ms, then reported "exited before its handshake (exit status 0)".
func TestHandshakeLineOutlivesTheExit(t *testing.T) {
	const line = "1|1|unix|/nowhere|grpc"
	testHookLineRead = func() { time.Sleep(300 * time.Millisecond) }
	t.Cleanup(func() { testHookLineRead = nil })
	p, err := startProcess(exec.Command("sh", "-c", "echo '"+line+"'"), slog.New(slog.DiscardHandler), nil, false, nil, [2]*os.File{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.closePipes()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := p.readHandshake(ctx, time.Minute, "echo")
	if err != nil || got != line {
		t.Fatalf("readHandshake: %q, %v; want %q", got, err, line)
	}
}
