package release

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestVerifyGivesUpOnAStalledSignature serves the signature manifest's
// headers and first bytes, then nothing: Verify, with a context without
// deadline (a host embedding the package), gives up after the response
// timeout with an error naming the registry, as a stalled binary
// download does.
func TestVerifyGivesUpOnAStalledSignature(t *testing.T) {
	parallel(t)
	var stall atomic.Value
	reg := stallingRegistry(t, &stall)
	repo, err := Open(reg.Host+"/plugins/fs", Options{PlainHTTP: true, ResponseTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Published without the short response timeout: on a loaded machine
	// (or under Wine) a request of the 20 MB push can take longer than
	// 300 ms to answer, and the test is of Verify, not of the push.
	publisher, err := Open(reg.Host+"/plugins/fs", Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	rel, _, pub := pushFS(t, publisher)
	stall.Store(".sig")
	done := make(chan error, 1)
	go func() { done <- Verify(context.Background(), repo, rel.Digest, pub) }()
	select {
	case err := <-done:
		if !errors.Is(err, errStalled) || !strings.Contains(err.Error(), reg.Host) {
			t.Fatalf("got %v, want a stalled signature naming %s", err, reg.Host)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Verify waited 15 s on a signature whose body stalls")
	}
}
