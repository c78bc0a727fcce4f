package release

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/registrytest"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestInstallRunsNoBinaryBeforeItsSignatureIsVerified holds back the
// registry's answer for the signature until the binary's blob was served,
// so that the download, which runs beside the signature check, finishes
// first. The release is signed by an untrusted key and its "binary" is a
// script that leaves a marker when run: Install refuses it with
// ErrUntrustedKey, never ran it, and leaves no file.
func TestInstallRunsNoBinaryBeforeItsSignatureIsVerified(t *testing.T) {
	parallel(t)
	var gate atomic.Bool
	blobServed := make(chan struct{})
	var once sync.Once
	reg := registrytest.Start(t, registrytest.Options{Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if gate.Load() && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".sig") {
				select {
				case <-blobServed:
				case <-time.After(5 * time.Second):
				}
			}
			h.ServeHTTP(w, r)
			if gate.Load() && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				once.Do(func() { close(blobServed) })
			}
		})
	}})
	repo, err := Open(reg.Host+"/plugins/fs", Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	marker := filepath.Join(testutil.TempDir(t), "ran")
	script := filepath.Join(testutil.TempDir(t), "objectstore-fs"+exe())
	writeFile(t, script, []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o755)
	bins, err := scanDir(releaseDir(t, script))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := pushRelease(ctx, repo, "2.1.0", bins, fakeDescription("2.1.0", 2), false)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newKey(t)
	if err := Sign(ctx, repo, rel.Digest, other); err != nil {
		t.Fatal(err)
	}
	_, trusted := newKey(t)
	gate.Store(true)
	dir := testutil.TempDir(t)
	_, err = Install(ctx, repo, rel, Target{Dir: dir, Keys: trusted, Cookie: objectstore.Cookie})
	if _, err := os.Stat(marker); err == nil {
		t.Error("Install ran the binary of a release whose signature it refused")
	}
	if !errors.Is(err, ErrUntrustedKey) {
		t.Fatalf("got %v, want ErrUntrustedKey", err)
	}
	assertOnly(t, dir)
}

// TestInstallOfALyingReleaseKeepsTheInstalledOne installs the fs plugin,
// then a newer release of the same binary whose metadata claims major 3:
// Install refuses the newer one with a *MetadataError and the binary
// installed before stays, unchanged.
func TestInstallOfALyingReleaseKeepsTheInstalledOne(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	good, key, pub := pushFS(t, repo)
	dir := testutil.TempDir(t)
	inst, err := Install(ctx, repo, good, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
	if err != nil {
		t.Fatal(err)
	}
	liar := pushUnsigned(t, repo, "fs", "2.2.0", fakeDescription("2.2.0", 3), false)
	if err := Sign(ctx, repo, liar.Digest, key); err != nil {
		t.Fatal(err)
	}
	chosen, err := Resolve(ctx, repo, Selection{Requirement: compat.Requirement{Kind: objectstore.Kind, Majors: []int{3}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Install(ctx, repo, chosen, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
	var me *MetadataError
	if !errors.As(err, &me) {
		t.Fatalf("got %v, want a MetadataError", err)
	}
	if got := fileSHA(t, inst.Path); got != inst.SHA256 {
		t.Errorf("the installed binary changed to SHA-256 %s, want %s", got, inst.SHA256)
	}
	assertOnly(t, dir, "objectstore-fs"+exe())
}

// TestInstallRefusesABinarySwappedWhileChecked replaces the staged
// temporary file with another plugin's binary just before Install starts
// it: Install fails and installs neither binary, whether it started the
// file it wrote through its descriptor (Linux) or hashed the path's file
// against the digest (elsewhere).
func TestInstallRefusesABinarySwappedWhileChecked(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	rel, _, pub := pushFS(t, repo)
	other, err := os.ReadFile(pluginBinary(t, "memory"))
	if err != nil {
		t.Fatal(err)
	}
	swap := &installHooks{beforeDescribe: func(tmp string) {
		next := tmp + ".swap"
		if err := testutil.WriteHoldingForks(next, other, 0o755); err != nil {
			t.Error(err)
		}
		if err := os.Rename(next, tmp); err != nil {
			t.Error(err)
		}
	}}
	dir := testutil.TempDir(t)
	_, err = Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie, hooks: swap})
	if err == nil || !(strings.Contains(err.Error(), "replaced") || errors.Is(err, ErrTampered)) {
		t.Fatalf("got %v, want an error saying the binary was replaced", err)
	}
	assertOnly(t, dir)
}

// TestCopyHashedHashesWhatItCopies copies 3 MiB and 7 bytes, read in
// uneven pieces, and checks the copy and its SHA-256; a failing writer
// ends the copy with its error.
func TestCopyHashedHashesWhatItCopies(t *testing.T) {
	parallel(t)
	data := make([]byte, 3<<20+7)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	n, sum, err := copyHashed(&out, iotest.HalfReader(bytes.NewReader(data)))
	want := sha256.Sum256(data)
	if err != nil || n != int64(len(data)) || !bytes.Equal(sum, want[:]) || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("copied %d bytes, err %v, sum %x; want %d bytes, sum %x, the same bytes", n, err, sum, len(data), want)
	}
	_, _, err = copyHashed(&failingAfter{limit: 1 << 20}, bytes.NewReader(data))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("got %v, want the writer's ENOSPC", err)
	}
}

// failingAfter accepts limit bytes, then fails with ENOSPC.
type failingAfter struct{ limit, n int }

func (w *failingAfter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		return 0, syscall.ENOSPC
	}
	w.n += len(p)
	return len(p), nil
}
