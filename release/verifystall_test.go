package release

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/registrytest"
)

// TestVerifyGivesUpOnAStalledSignature serves the signature manifest's
// headers and first bytes, then nothing: Verify, with a context without
// deadline (a host embedding the package), gives up after the response
// timeout with an error naming the registry, as a stalled binary
// download does.
func TestVerifyGivesUpOnAStalledSignature(t *testing.T) {
	var stall atomic.Bool
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	reg := registrytest.Start(t, registrytest.Options{Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !stall.Load() || r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, ".sig") {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes()[:8])
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
		})
	}})
	repo, err := Open(reg.Host+"/plugins/fs", Options{PlainHTTP: true, ResponseTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rel, _, pub := pushFS(t, repo)
	stall.Store(true)
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
