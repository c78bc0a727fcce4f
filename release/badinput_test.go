package release

import (
	"context"
	"crypto"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/describe"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/registrytest"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestInstallRefusesUnsignedAndUntrusted checks Install refuses a
// release without a signature and one signed by a key the host does not
// trust, each with an error that says which, and installs nothing.
func TestInstallRefusesUnsignedAndUntrusted(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	desc, err := describeBinary(ctx, pluginBinary(t, "fs"), objectstore.Cookie, describe.DefaultTimeout)
	if err != nil {
		t.Fatal(err)
	}
	rel := pushUnsigned(t, repo, "fs", "2.1.0", desc, false)
	_, trusted := newKey(t)
	dir := testutil.TempDir(t)
	_, err = Install(ctx, repo, rel, Target{Dir: dir, Keys: trusted, Cookie: objectstore.Cookie})
	if !errors.Is(err, ErrUnsigned) || !strings.Contains(err.Error(), "unsigned") {
		t.Fatalf("unsigned release: got %v, want ErrUnsigned", err)
	}
	other, _ := newKey(t)
	if err := Sign(ctx, repo, rel.Digest, other); err != nil {
		t.Fatal(err)
	}
	_, err = Install(ctx, repo, rel, Target{Dir: dir, Keys: trusted, Cookie: objectstore.Cookie})
	if !errors.Is(err, ErrUntrustedKey) || !strings.Contains(err.Error(), "not signed by a trusted key") {
		t.Fatalf("release signed by an unknown key: got %v, want ErrUntrustedKey", err)
	}
	assertOnly(t, dir)
}

// TestVerifyRefusesContentChangedAfterSigning moves a signed release's
// tag to other content and copies its signature along: the signature
// then names another manifest, and Install says the release was changed
// after signing.
func TestVerifyRefusesContentChangedAfterSigning(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	good, _, pub := pushFS(t, repo)
	// The attacker's release: another binary under the same tag, with
	// the good signature copied onto the new digest's signature tag.
	bad := pushUnsigned(t, repo, "memory", "2.1.0", good.Description, true)
	sigDesc, err := repo.target.Resolve(ctx, signatureTag(good.Digest))
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.target.Tag(ctx, sigDesc, signatureTag(bad.Digest)); err != nil {
		t.Fatal(err)
	}
	rel, err := Fetch(ctx, repo, "2.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Digest != bad.Digest {
		t.Fatalf("the tag was not moved")
	}
	dir := testutil.TempDir(t)
	_, err = Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
	if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "changed after it was signed") || !strings.Contains(err.Error(), good.Digest.String()) {
		t.Fatalf("got %v, want ErrTampered naming the signed manifest", err)
	}
	assertOnly(t, dir)
}

// TestInstallRefusesTamperedLayer corrupts the binary's blob in an OCI
// image-layout mirror: the download no longer has the signed digest, so
// Install refuses it and leaves no file.
func TestInstallRefusesTamperedLayer(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	rel, _, pub := pushFS(t, repo)
	mirror, layout := mirrorTo(t, repo, rel.Version)
	blob := filepath.Join(layout, "blobs", "sha256", fileSHA(t, pluginBinary(t, "fs")))
	f, err := os.OpenFile(blob, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("tampered"), 4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mrel, err := Fetch(ctx, mirror, rel.Version)
	if err != nil {
		t.Fatal(err)
	}
	dir := testutil.TempDir(t)
	_, err = Install(ctx, mirror, mrel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
	if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "tampered or corrupt blob") || !strings.Contains(err.Error(), "objectstore-fs") {
		t.Fatalf("got %v, want ErrTampered naming the binary", err)
	}
	assertOnly(t, dir)
}

// TestInstallRemovesReleaseWhoseMetadataLies publishes the fs binary
// (objectstore majors 2 and 1) with metadata claiming major 3: Install
// chooses it by the metadata, starts it, sees the difference, removes
// the binary and reports both.
func TestInstallRemovesReleaseWhoseMetadataLies(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	key, pub := newKey(t)
	rel := pushUnsigned(t, repo, "fs", "2.1.0", fakeDescription("2.1.0", 3), false)
	if err := Sign(ctx, repo, rel.Digest, key); err != nil {
		t.Fatal(err)
	}
	chosen, err := Resolve(ctx, repo, Selection{Requirement: compat.Requirement{Kind: objectstore.Kind, Majors: []int{3}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := testutil.TempDir(t)
	_, err = Install(ctx, repo, chosen, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
	var me *MetadataError
	if !errors.As(err, &me) {
		t.Fatalf("got %v, want a MetadataError", err)
	}
	for _, want := range []string{"objectstore 3.0", "objectstore 2.1", "was removed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	assertOnly(t, dir)
}

// concurrentInstallsIntoOneDirectory runs two installs of two of the
// published examples into one directory at once: the directory lock makes
// them take turns, and both binaries end complete (TestPublishedExamples).
func concurrentInstallsIntoOneDirectory(t *testing.T, repo *Repository, pub []crypto.PublicKey) {
	ctx := testCtx(t)
	dir := testutil.TempDir(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, v := range []string{"2.1.0", "1.3.0", "2.1.0", "1.3.0"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel, err := Fetch(ctx, repo, v)
			if err == nil {
				_, err = Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("install %d: %v", i, err)
		}
	}
	assertOnly(t, dir, "objectstore-fs", "objectstore-memory")
	for _, n := range []string{"fs", "memory"} {
		if fileSHA(t, filepath.Join(dir, "objectstore-"+n+exe())) != fileSHA(t, pluginBinary(t, n)) {
			t.Errorf("objectstore-%s differs from the published binary", n)
		}
	}
}

// misbehavingRegistry starts a registry whose behaviour the test sets
// through mode: "ok"; "503" for every request; "flaky", 503 while
// failing counts down; "slow", no answer until the request gives up.
// requests counts the requests.
func misbehavingRegistry(t *testing.T) (reg *registrytest.Registry, mode *atomic.Value, failing, requests *atomic.Int64) {
	failing, requests, mode = new(atomic.Int64), new(atomic.Int64), new(atomic.Value)
	slow := make(chan struct{})
	t.Cleanup(func() { close(slow) })
	mode.Store("ok")
	reg = registrytest.Start(t, registrytest.Options{Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			switch mode.Load() {
			case "503":
				http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
				return
			case "flaky":
				if failing.Add(-1) >= 0 {
					http.Error(w, "busy", http.StatusServiceUnavailable)
					return
				}
			case "slow":
				select {
				case <-slow:
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	}})
	return reg, mode, failing, requests
}

// TestRegistryErrorsAreRetriedAndNamed checks a registry that fails with
// 503 is retried a bounded number of times with the error naming it, a
// registry that fails twice and recovers is used, a slow one times out,
// and a registry that is down is named.
func TestRegistryErrorsAreRetriedAndNamed(t *testing.T) {
	parallel(t)
	reg, mode, failing, requests := misbehavingRegistry(t)
	opts := Options{PlainHTTP: true, Retries: 3, Backoff: 5 * time.Millisecond, ResponseTimeout: 200 * time.Millisecond}
	repo, err := Open(reg.Host+"/plugins/fs", opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	publisher, err := Open(reg.Host+"/plugins/fs", Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	pushFS(t, publisher)

	mode.Store("503")
	requests.Store(0)
	_, err = Fetch(ctx, repo, "2.1.0")
	if err == nil || !strings.Contains(err.Error(), reg.Host) {
		t.Fatalf("503: got %v, want an error naming %s", err, reg.Host)
	}
	if n := requests.Load(); n != 4 {
		t.Errorf("503: %d requests, want 1 + 3 retries", n)
	}

	mode.Store("flaky")
	failing.Store(2)
	if _, err := Fetch(ctx, repo, "2.1.0"); err != nil {
		t.Errorf("a registry failing twice then answering: %v", err)
	}

	mode.Store("slow")
	requests.Store(0)
	_, err = Fetch(ctx, repo, "2.1.0")
	if err == nil || !strings.Contains(err.Error(), reg.Host) {
		t.Fatalf("slow: got %v, want an error naming %s", err, reg.Host)
	}
	if n := requests.Load(); n != 4 {
		t.Errorf("slow: %d requests, want 1 + 3 retries", n)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downHost := ln.Addr().String()
	ln.Close()
	down, err := Open(downHost+"/plugins/fs", opts)
	if err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err = Resolve(dctx, down, Selection{Requirement: compat.Requirement{Kind: objectstore.Kind, Majors: []int{2}}})
	if err == nil || !strings.Contains(err.Error(), downHost) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("down: got %v, want a refused connection naming %s", err, downHost)
	}
}

// TestInstallWaitsForTheDirectoryLock holds the directory's install lock
// as another install would: Install waits for it, writes nothing while it
// waits, and gives up with a clear error when its context ends.
func TestInstallWaitsForTheDirectoryLock(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	rel, _, pub := pushFS(t, repo)
	dir := testutil.TempDir(t)
	unlock, err := lockDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = Install(short, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
	if err == nil || !strings.Contains(err.Error(), "locked by another install") {
		t.Fatalf("got %v, want the lock wait to end with the context", err)
	}
	assertOnly(t, dir)
	unlock()
	if _, err := Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie}); err != nil {
		t.Fatalf("after the lock is released: %v", err)
	}
	assertOnly(t, dir, "objectstore-fs")
}

// failingWriter writes to a real temporary file until limit bytes, then
// fails as a full disk does.
type failingWriter struct {
	f     *os.File
	limit int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.limit {
		n, _ := w.f.Write(p[:w.limit])
		w.limit = 0
		return n, syscall.ENOSPC
	}
	w.limit -= len(p)
	return w.f.Write(p)
}

func (w *failingWriter) Close() error { return w.f.Close() }

// TestInstallWhoseWriteFailsLeavesNoPartialFile fails the binary's write
// after 1 MiB, on every OS (TestInstallOnFullDiskLeavesNoPartialFile
// fills a real tmpfs on Linux): nothing is installed, no temporary file
// is left, and a retry installs the binary.
func TestInstallWhoseWriteFailsLeavesNoPartialFile(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	rel, _, pub := pushFS(t, repo)
	failing := &installHooks{createTemp: func(dir, pattern string) (io.WriteCloser, string, error) {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, "", err
		}
		return &failingWriter{f: f, limit: 1 << 20}, f.Name(), nil
	}}
	dir := testutil.TempDir(t)
	_, err := Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie, hooks: failing})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "nothing was installed") {
		t.Fatalf("got %v, want ENOSPC and nothing installed", err)
	}
	assertOnly(t, dir)
	if _, err := Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie}); err != nil {
		t.Fatal(err)
	}
	assertOnly(t, dir, "objectstore-fs")
}

// TestInstallGivesUpOnAStalledDownload serves the binary's blob from a
// registry that sends its headers and a first kilobyte, then nothing:
// Install gives up after the response timeout with an error naming the
// registry, and leaves no file.
func TestInstallGivesUpOnAStalledDownload(t *testing.T) {
	parallel(t)
	var stall atomic.Value // the suffix of the blob that stalls
	reg := stallingRegistry(t, &stall)
	repo, err := Open(reg.Host+"/plugins/fs", Options{PlainHTTP: true, ResponseTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	publisher, err := Open(reg.Host+"/plugins/fs", Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	rel, _, pub := pushFS(t, publisher)
	stall.Store("/blobs/sha256:" + fileSHA(t, pluginBinary(t, "fs")))
	dir := testutil.TempDir(t)
	_, err = Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
	if !errors.Is(err, errStalled) || !strings.Contains(err.Error(), reg.Host) || !strings.Contains(err.Error(), "nothing was installed") {
		t.Fatalf("got %v, want a stalled download naming %s", err, reg.Host)
	}
	assertOnly(t, dir)
}
