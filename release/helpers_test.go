package release

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/internal/registrytest"
	"github.com/plugkit/plugkit/internal/testutil"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

func TestMain(m *testing.M) {
	if os.Getenv(hangEnv) != "" {
		serveHangingDescribe()
		return
	}
	if os.Getenv(lineOnlyEnv) != "" {
		describeByLineOnly()
	}
	os.Exit(testutil.Main(testutil.Then(buildFirst{m}, func() {
		if sharedGuests.rt != nil {
			sharedGuests.rt.Close(context.Background())
		}
		if buildDir != "" {
			os.RemoveAll(buildDir)
		}
		registrytest.Remove()
	})))
}

// buildFirst builds the example plugins (pluginBinary) before it runs
// the tests, so that no test's deadline (testCtx) runs while they build:
// a first build on a loaded machine took more than the minute a test
// has (TestInstallRefusesUnsignedAndUntrusted failed so, its describe
// waiting for the handshake), and the tests that run in parallel would
// all wait for it with their deadlines running.
type buildFirst struct{ m *testing.M }

func (b buildFirst) Run() int {
	buildOnce.Do(buildPlugins)
	if buildErr != nil {
		fmt.Fprintf(os.Stderr, "building the example plugins the tests install: %v\n", buildErr)
		return 1
	}
	return b.m.Run()
}

// parallel runs the test in parallel with the package's other tests
// (t.Parallel), but on Windows: there the registry keeps blobs in memory
// (registrytest), where each push of a 20 MB plugin is CPU-bound copying,
// and two tests' pushes at once under Wine on a loaded machine ran past
// the tests' deadlines; there the tests run one after another, as before.
func parallel(t *testing.T) {
	if runtime.GOOS != "windows" {
		t.Parallel()
	}
}

// plugins are the example objectstore plugins and their versions.
var plugins = map[string]string{"memory": "1.3.0", "fs": "2.1.0", "future": "3.0.0"}

// pluginBinary builds the example objectstore plugin name (fs, memory,
// future) once per test run and returns its path. TestMain builds them
// before any test runs (buildFirst), so no process that a test forks can
// hold a build open for writing while another test runs it (ETXTBSY).
func pluginBinary(t testing.TB, name string) string {
	t.Helper()
	buildOnce.Do(buildPlugins)
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "objectstore-"+name+exe())
}

// buildPlugins builds the example plugins into buildDir (see
// pluginBinary); it sets buildErr when a build fails.
func buildPlugins() {
	buildDir, buildErr = os.MkdirTemp("", "release-plugins")
	if buildErr != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for n := range plugins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := testutil.BuildBinary(ctx, filepath.Join(buildDir, "objectstore-"+n+exe()), "../examples/objectstore/plugins/"+n)
			if err != nil {
				mu.Lock()
				buildErr = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func exe() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

// here is this machine's platform.
var here = runtime.GOOS + "/" + runtime.GOARCH

// releaseDir lays bin out as a release directory for this platform and
// the extra platforms (whose "binaries" are small distinct files).
func releaseDir(t testing.TB, bin string, extra ...string) string {
	t.Helper()
	dir := testutil.TempDir(t)
	name := filepath.Base(bin)
	sub := filepath.Join(dir, strings.ReplaceAll(here, "/", "_"))
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := testutil.PlaceBinary(bin, filepath.Join(sub, name)); err != nil {
		t.Fatal(err)
	}
	for _, p := range extra {
		if p == here {
			continue // the tests' extra platforms include windows/amd64: on Windows, keep the real binary
		}
		sub := filepath.Join(dir, strings.ReplaceAll(p, "/", "_"))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(sub, name), []byte("binary for "+p), 0o755)
	}
	return dir
}

// readFile is the content of the file at path.
func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeFile writes data to path with mode, making its directory, and
// holds off forks while it writes (testutil.WriteHoldingForks).
func writeFile(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := testutil.WriteHoldingForks(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

func newKey(t testing.TB) (crypto.Signer, []crypto.PublicKey) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k, []crypto.PublicKey{k.Public()}
}

// testCtx is a test's deadline: the bound of a hang, not a measure, and
// generous, since the tests run in parallel on machines that run other
// packages' tests too (at load 30, 100 pushes took more than a minute).
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// counter counts a registry's requests by kind.
type counter struct {
	blobGets, manifestGets, all atomic.Int64
}

func (c *counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.all.Add(1)
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:") {
			c.blobGets.Add(1)
		}
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/") {
			c.manifestGets.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

// openRegistry starts a registry and opens repo on it.
func openRegistry(t testing.TB, repo string, c *counter) *Repository {
	t.Helper()
	var opts registrytest.Options
	if c != nil {
		opts.Wrap = c.wrap
	}
	reg := registrytest.Start(t, opts)
	r, err := Open(reg.Host+"/"+repo, Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// publishExamples pushes and signs the three example plugins as three
// releases of repo.
func publishExamples(t testing.TB, repo *Repository, key crypto.Signer) {
	t.Helper()
	for name, v := range plugins {
		_, err := Push(testCtx(t), repo, Publication{Dir: releaseDir(t, pluginBinary(t, name), "darwin/arm64"), Version: v, Key: key, Cookie: objectstore.Cookie})
		if err != nil {
			t.Fatalf("push %s %s: %v", name, v, err)
		}
	}
}

// fakeDescription claims kind objectstore at the majors given.
func fakeDescription(version string, majors ...uint32) *catalogv1.DescribeResponse {
	k := &catalogv1.Kind{Name: objectstore.Kind}
	for _, m := range majors {
		k.Majors = append(k.Majors, &catalogv1.Major{Major: m, Service: fmt.Sprintf("objectstore.v%d.ObjectStore", m), Names: []string{"example.com/fake"}})
	}
	return &catalogv1.DescribeResponse{PluginVersion: version, Kinds: []*catalogv1.Kind{k}}
}

// pushFS pushes the fs example plugin as release 2.1.0 of repo, for this
// platform and the extra ones, signed by a new key; it returns the
// release, the key and the key's public half to trust.
func pushFS(t testing.TB, repo *Repository, extra ...string) (Release, crypto.Signer, []crypto.PublicKey) {
	t.Helper()
	key, pub := newKey(t)
	rel, err := Push(testCtx(t), repo, Publication{Dir: releaseDir(t, pluginBinary(t, "fs"), extra...), Version: "2.1.0", Key: key, Cookie: objectstore.Cookie})
	if err != nil {
		t.Fatalf("push fs 2.1.0: %v", err)
	}
	return rel, key, pub
}

// mirrorTo copies release version of repo into a new OCI image-layout
// directory and returns the mirror and the directory.
func mirrorTo(t testing.TB, repo *Repository, version string) (*Repository, string) {
	t.Helper()
	layout := testutil.TempDir(t)
	mirror, err := Open(LayoutPrefix+layout, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Mirror(testCtx(t), repo, mirror, version); err != nil {
		t.Fatalf("mirror %s: %v", version, err)
	}
	return mirror, layout
}

// pushUnsigned pushes the example plugin's binary, for this platform
// only, as release version of repo with the Describe answer desc (true or
// not), and signs nothing.
func pushUnsigned(t testing.TB, repo *Repository, plugin, version string, desc *catalogv1.DescribeResponse, overwrite bool) Release {
	t.Helper()
	bins, err := scanDir(releaseDir(t, pluginBinary(t, plugin)))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := pushRelease(testCtx(t), repo, version, bins, desc, overwrite)
	if err != nil {
		t.Fatalf("push %s %s: %v", plugin, version, err)
	}
	return rel
}

// stallingRegistry starts a registry that answers a GET whose path ends
// in the suffix stall holds (none while it holds "") with the true
// response's headers and first kilobyte (at most half its body), then
// sends nothing until the client gives up or the test ends. The headers
// go out as the registry writes them, so a client's response-header
// timeout never fires first, however slowly a large blob is read.
func stallingRegistry(t testing.TB, stall *atomic.Value) *registrytest.Registry {
	stall.Store("")
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return registrytest.Start(t, registrytest.Options{Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			suffix := stall.Load().(string)
			if suffix == "" || r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, suffix) {
				h.ServeHTTP(w, r)
				return
			}
			h.ServeHTTP(&stallingWriter{ResponseWriter: w, left: -1, done: done, ctx: r.Context()}, r)
		})
	}})
}

// errStallEnded ends a stalled response's handler once the stall is over.
var errStallEnded = errors.New("stalled response ended")

// stallingWriter passes the headers and the first kilobyte of a body on
// (at most half of it, when the body's length is known), then blocks the
// handler's next write until the client hangs up or the test ends.
type stallingWriter struct {
	http.ResponseWriter
	left int // bytes still to pass on; -1 until the first write
	done <-chan struct{}
	ctx  context.Context
}

func (s *stallingWriter) Write(p []byte) (int, error) {
	if s.left < 0 {
		s.left = 1024
		if n, err := strconv.Atoi(s.Header().Get("Content-Length")); err == nil {
			s.left = min(s.left, n/2)
		}
	}
	n := min(len(p), s.left)
	if n > 0 {
		s.ResponseWriter.Write(p[:n])
		s.left -= n
	}
	if s.left > 0 {
		return n, nil
	}
	s.ResponseWriter.(http.Flusher).Flush()
	select {
	case <-s.done:
	case <-s.ctx.Done():
	case <-time.After(20 * time.Second):
	}
	return n, errStallEnded
}
