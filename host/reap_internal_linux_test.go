package host

import (
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// TestExitSeenWithoutSIGCHLD: a program that stops the notification of
// signals it did not ask for itself (signal.Reset) takes SIGCHLD from the
// one reaper; the exit of a plugin process is still seen, by the
// reaper's periodic check, and not waited for forever.
func TestExitSeenWithoutSIGCHLD(t *testing.T) {
	startSpawner()
	signal.Reset(syscall.SIGCHLD)
	t.Cleanup(func() { signal.Notify(childExits, syscall.SIGCHLD) })
	p, err := startProcess(exec.Command("sleep", "0.3"), slog.New(slog.DiscardHandler), nil, false, nil, [2]*os.File{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.closePipes()
	select {
	case <-p.exited:
	case <-time.After(10 * reapCheck):
		t.Fatalf("the process's exit was not seen within %v without SIGCHLD", 10*reapCheck)
	}
	if !p.state.Success() {
		t.Errorf("exit status %v, want 0", p.state)
	}
}
