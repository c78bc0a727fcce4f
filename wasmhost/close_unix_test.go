//go:build unix

package wasmhost_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/wasmhost"
)

// TestCloseWaitsAtMostCloseWait: Close gives up on guests that do not end
// when stopped (here at least two of three, each waiting in the host's
// open of a FIFO in a granted directory) after its one deadline of 2 s,
// rather than waiting for ever on each guest after the first.
func TestCloseWaitsAtMostCloseWait(t *testing.T) {
	dir := t.TempDir()
	rt := wasmhost.New(testConfig(wasmhost.Config{Dirs: []wasmhost.Dir{{HostPath: dir, GuestPath: "/fifo"}}}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var guests []host.Guest
	for i := range 3 {
		name := string(rune('a' + i))
		fifo := filepath.Join(dir, name)
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer outR.Close()
		defer outW.Close()
		g, err := rt.StartGuest(ctx, host.GuestSpec{Path: guestModule(t), Env: []string{"PLUGKIT_GUEST_READ=/fifo/" + name}, Stdout: outW, Stderr: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		guests = append(guests, g)
		waitLine(t, outR, "reading\n")
		defer unblock(fifo) // the guest's open returns: it ends
	}
	closed := make(chan error, 1)
	go func() { closed <- rt.Close(context.Background()) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second): // Close promises 2 s
		t.Fatal("Close still waits for guests that do not end")
	}
	stayed := 0
	for _, g := range guests {
		select {
		case <-g.Done():
		default:
			stayed++
		}
	}
	if stayed < 2 {
		t.Fatalf("%d guests stayed after Close; the test needs 2 (each waiting in the host's open of a FIFO)", stayed)
	}
}

// waitLine waits for the line want on r.
func waitLine(t *testing.T, r *os.File, want string) {
	t.Helper()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if s != want {
			t.Fatalf("the guest wrote %q; want %q", s, want)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the guest never wrote %q", want)
	}
}

// unblock ends a wait in opening the FIFO at path for reading.
func unblock(path string) {
	if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}
