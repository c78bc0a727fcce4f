package guestconn

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// within fails t unless f returns within a generous deadline.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
	}
}

// TestBothWays: what the host writes, the guest reads, without waiting
// once it is there, and what the guest writes, the host reads.
func TestBothWays(t *testing.T) {
	p := New()
	defer p.Close()
	buf := make([]byte, 64)
	if n, err := p.TryRead(buf); n != 0 || !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("TryRead on nothing: %d, %v; want ErrWouldBlock", n, err)
	}
	if p.WaitReadable(0) || p.WaitReadable(time.Millisecond) {
		t.Fatal("WaitReadable on nothing: true")
	}
	var got []byte
	within(t, "the guest's wait", func() {
		go p.Host().Write([]byte("to guest"))
		if !p.WaitReadable(-1) {
			t.Error("WaitReadable(-1): false")
		}
		for len(got) < len("to guest") {
			n, err := p.TryRead(buf)
			if err != nil && !errors.Is(err, ErrWouldBlock) {
				t.Error(err)
				return
			}
			got = append(got, buf[:n]...)
		}
	})
	if string(got) != "to guest" {
		t.Errorf("the guest read %q", got)
	}
	within(t, "the host's read", func() {
		go p.Write([]byte("to host"))
		b, err := io.ReadAll(io.LimitReader(p.Host(), int64(len("to host"))))
		if err != nil || string(b) != "to host" {
			t.Errorf("the host read %q, %v", b, err)
		}
	})
}

// TestCloseWakesEveryWait: closing either end wakes a guest waiting for
// input, a host reading and a writer waiting for room; what was written
// before is still read, then the end of it.
func TestCloseWakesEveryWait(t *testing.T) {
	for _, side := range []string{"host", "pipe"} {
		p := New()
		p.Host().Write([]byte("left"))
		if _, err := p.Write(bytes.Repeat([]byte("x"), bufLimit)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		n, _ := p.TryRead(buf)
		if string(buf[:n]) != "left" {
			t.Fatalf("%s: the guest read %q", side, buf[:n])
		}
		waits := make(chan string, 3)
		go func() { p.WaitReadable(-1); waits <- "guest's wait" }()
		go func() { p.Write([]byte("more")); waits <- "guest's write, waiting for room" }()
		go func() {
			p.Host().Write([]byte("last"))
			waits <- "host's write"
		}()
		time.Sleep(10 * time.Millisecond) // let them wait, if they do
		if side == "host" {
			p.Host().Close()
		} else {
			p.Close()
		}
		for range 3 {
			select {
			case <-waits:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: a wait did not end at Close", side)
			}
		}
		if _, err := p.Write([]byte("x")); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: a write after Close: %v; want ErrClosed", side, err)
		}
		for {
			if _, err := p.TryRead(buf); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("%s: the guest's read after Close: %v; want io.EOF", side, err)
				}
				break
			}
		}
		within(t, "the host's read after Close", func() {
			if b, err := io.ReadAll(p.Host()); err != nil || len(b) != bufLimit {
				t.Errorf("%s: the host read %d bytes after Close, %v; want the %d written before", side, len(b), err, bufLimit)
			}
		})
	}
}
