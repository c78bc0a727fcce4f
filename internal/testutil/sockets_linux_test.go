package testutil

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestListenersUnderSocketChurn counts this process's listeners while
// other goroutines open and close unix sockets: /proc/net/unix is read in
// chunks, and an entry can slip between two of them when sockets come and
// go, so a count from one read can miss a listener (seen once on the
// interop multiplexing test under load). Every count must be exact.
func TestListenersUnderSocketChurn(t *testing.T) {
	dir := TempDir(t)
	var listeners []net.Listener
	for i := range 32 {
		l, err := net.Listen("unix", filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		listeners = append(listeners, l)
	}
	want := Listeners(t, os.Getpid())
	if want < len(listeners) {
		t.Fatalf("quiet: %d listeners, want at least %d", want, len(listeners))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []int
			for {
				select {
				case <-stop:
					closeAll(held)
					return
				default:
				}
				fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
				if err != nil {
					continue
				}
				held = append(held, fds[0], fds[1])
				if len(held) > 400 {
					closeAll(held[:200])
					held = append(held[:0:0], held[200:]...)
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
		if got := Listeners(t, os.Getpid()); got != want {
			t.Fatalf("count %d under churn: %d listeners, want %d", i, got, want)
		}
	}
}

func closeAll(fds []int) {
	for _, fd := range fds {
		syscall.Close(fd)
	}
}
