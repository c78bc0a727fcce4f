package wasmhost_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	_ "github.com/plugkit/plugkit/internal/testutil/wazeroversion" // the tests' compilation cache, under the version wasmcompile compiles for
	"github.com/plugkit/plugkit/wasmhost"
)

var testCookie = handshake.Cookie{Key: "PLUGKIT_TEST_COOKIE", Value: "c00kie"}

var (
	buildOnce sync.Once
	guestPath string
	buildErr  error
)

// builds is the directory of the tests' builds, made at its first use
// (buildDir) and removed by TestMain: a child process of the tests (a
// module bomb's host, the spinning guests' process) builds nothing and so
// makes nothing it could leave behind when it dies (a bomb's watchdog
// ends it with os.Exit, a deadline with SIGKILL; testutil.Main fails the
// tests on what is left).
var builds struct {
	once sync.Once
	dir  string
	err  error
}

// buildDir is the tests' build directory, made at the first call.
func buildDir() (string, error) {
	builds.once.Do(func() { builds.dir, builds.err = os.MkdirTemp("", "wasmhost-test") })
	return builds.dir, builds.err
}

// guestModule builds testdata/guest for wasip1, once per test binary.
func guestModule(t *testing.T) string {
	t.Helper()
	if err := buildGuest(); err != nil {
		t.Fatal(err)
	}
	return guestPath
}

// guestCache is the compilation cache holding the guest compiled, or ""
// when there is none (testutil.CompiledWasm).
var guestCache string

// buildGuest builds the guest and compiles it into guestCache, once.
func buildGuest() error {
	buildOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		dir, err := buildDir()
		if err != nil {
			buildErr = err
			return
		}
		guestPath = filepath.Join(dir, "guest.wasm")
		if buildErr = testutil.BuildWasm(ctx, guestPath, "./testdata/guest"); buildErr == nil {
			guestCache = testutil.CompiledWasm(ctx, guestPath)
		}
	})
	return buildErr
}

// sharedRuntime runs the guest for the tests that need no settings of
// their own.
func sharedRuntime() *wasmhost.Runtime { return sharedRuntimeWith(0, 0) }

// shared are the Runtimes the tests share, one per memory limit and CPU
// budget: a Runtime's first start of the guest checks and loads the
// compiled guest (some 30 MB of module and 90 MB compiled), seconds under
// the race detector, which a test that makes its own pays again. A test
// that uses one ends its guests before it returns (its Clients' Close)
// and waits for the Runtime's other guests to end before it counts
// anything (waitEnded). TestMain closes them.
var shared struct {
	mu sync.Mutex
	rt map[sharedKey]*wasmhost.Runtime
}

// sharedKey is what a shared Runtime's Config sets.
type sharedKey struct {
	memoryLimit int64
	cpuBudget   time.Duration
}

// sharedRuntimeWith is the shared Runtime of the memory limit and CPU
// budget given (0: the defaults).
func sharedRuntimeWith(memoryLimit int64, cpuBudget time.Duration) *wasmhost.Runtime {
	k := sharedKey{memoryLimit, cpuBudget}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.rt == nil {
		shared.rt = make(map[sharedKey]*wasmhost.Runtime)
	}
	if rt := shared.rt[k]; rt != nil {
		return rt
	}
	rt := wasmhost.New(testConfig(wasmhost.Config{MemoryLimit: memoryLimit, CPUBudget: cpuBudget}))
	shared.rt[k] = rt
	return rt
}

// closeShared closes the shared Runtimes (none made, none closed: a
// bomb child, TestBombChild, builds and compiles no guest).
func closeShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for _, rt := range shared.rt {
		rt.Close(context.Background())
	}
}

// testConfig is cfg running the guest compiled from the tests' own
// compilation cache (filled outside the race detector, under which
// wazero's compiler takes minutes over the 30 MB guest), or interpreted
// when there is no cache: these tests are about what the guest may do,
// which the engine does not change.
func testConfig(cfg wasmhost.Config) wasmhost.Config {
	buildGuest()
	if guestCache == "" {
		cfg.Interpret = true
	}
	cfg.CacheDir = guestCache
	cfg.CacheBytes = testutil.WasmCacheBytes
	return cfg
}

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(testutil.Then(m, func() {
		closeShared()
		if builds.dir != "" {
			os.RemoveAll(builds.dir)
		}
	})))
}

// TestCacheUnderTheRequiredVersion: this test binary's wazero keys a
// compilation cache by the version go.mod requires, as wasmcompile (built
// by go run) and the commands' test binaries do, so that the modules
// wasmcompile compiles for the tests serve every test binary. A library's
// test binary has no dependencies in its build information, and its
// wazero said "dev": its Runtimes looked in another directory, and a
// module its tests and the commands' tests both start was compiled twice.
func TestCacheUnderTheRequiredVersion(t *testing.T) {
	want, err := testutil.WazeroVersion()
	if err != nil {
		t.Fatal(err)
	}
	dir := testutil.TempDir(t)
	rt := wasmhost.New(wasmhost.Config{CacheDir: dir})
	defer rt.Close(context.Background())
	rt.Compile(context.Background(), []byte("\x00asm\x01\x00\x00\x00")) // opens the cache; the module is beside the point
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if name := "wazero-" + want + "-" + runtime.GOARCH + "-" + runtime.GOOS; len(got) != 1 || got[0] != name {
		t.Errorf("the compilation cache holds %v; want %s alone (the version go.mod requires)", got, name)
	}
}

func command(t *testing.T, rt *wasmhost.Runtime) host.Command {
	return host.Command{Path: guestModule(t), Cookie: testCookie, Runner: rt}
}

func startGuest(t *testing.T, cmd host.Command, versions ...int) *host.Client {
	t.Helper()
	if len(versions) == 0 {
		versions = []int{1, 2}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := host.Start(ctx, cmd, host.Options{Versions: versions, Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func exists(c *host.Client, key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := objectstorev1.NewObjectStoreClient(c.Conn()).Exists(ctx, &objectstorev1.ExistsRequest{Key: key})
	if err == nil && !resp.GetExists() {
		err = errors.New("answered false")
	}
	return err
}

// waitEnded waits for rt to have no guest left.
func waitEnded(t *testing.T, rt *wasmhost.Runtime) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for wasmhost.Running(rt) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d guests still run", wasmhost.Running(rt))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStartCallClose compiles the guest into a compilation cache, and a
// second Runtime starts it from the cache. Under the race detector, where
// wazero's compiler takes minutes over the guest (and its interpreter some
// 6 s of CPU to prepare it), the guest runs from the tests' own cache
// (testConfig); the objectstore matrix's tests run guests interpreted.
func TestStartCallClose(t *testing.T) {
	dir, err := buildDir()
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	rt := sharedRuntime()
	if !raceEnabled {
		rt = wasmhost.New(wasmhost.Config{CacheDir: cache})
		t.Cleanup(func() { rt.Close(context.Background()) }) // after the Clients
	}
	waitEnded(t, rt)
	c := startGuest(t, command(t, rt))
	if c.Version() != 2 || c.Pid() != 0 || c.TLS() || c.ReattachConfig().Addr.Network != "stdio" {
		t.Errorf("version %d, pid %d, TLS %v, network %q: want 2, 0, false, stdio", c.Version(), c.Pid(), c.TLS(), c.ReattachConfig().Addr.Network)
	}
	for i := range 50 {
		if err := exists(c, fmt.Sprintf("yes-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := exists(c, "print:hello from the guest"); err != nil {
		t.Fatalf("a guest writing to its stdout broke the connection: %v", err)
	}
	if err := exists(c, "yes"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Exited():
	default:
		t.Error("Close returned before the guest ended")
	}
	waitEnded(t, rt)
	if raceEnabled {
		return
	}
	if entries, err := os.ReadDir(cache); err != nil || len(entries) == 0 {
		t.Fatalf("the compilation cache %s: %v, %d entries", cache, err, len(entries))
	}
	cached := wasmhost.New(wasmhost.Config{CacheDir: cache})
	t.Cleanup(func() { cached.Close(context.Background()) })
	if err := exists(startGuest(t, command(t, cached)), "yes"); err != nil {
		t.Error(err)
	}
}

func TestHandshakeErrors(t *testing.T) {
	rt := sharedRuntime()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cmd := command(t, rt)
	cmd.Cookie.Value = "wrong"
	_, err := host.Start(ctx, cmd, host.Options{Versions: []int{1}, Logger: testutil.Logger(t)})
	var exit *host.ExitError
	if !errors.As(err, &exit) || exit.InUse || !strings.Contains(err.Error(), "rejected the magic cookie") {
		t.Errorf("wrong cookie: %v; want an ExitError saying the cookie was rejected", err)
	}

	cmd = command(t, rt)
	cmd.Env = []string{"PLUGKIT_GUEST_VERSIONS=3"}
	_, err = host.Start(ctx, cmd, host.Options{Versions: []int{1, 2}, Logger: testutil.Logger(t)})
	var ve *handshake.VersionError
	if !errors.As(err, &ve) {
		t.Errorf("no common version: %v; want a handshake.VersionError", err)
	}

	// A module without a runtime says what to do.
	_, err = host.Start(ctx, host.Command{Path: guestModule(t), Cookie: testCookie}, host.Options{Versions: []int{1}})
	if !errors.Is(err, host.ErrWasmNeedsRuntime) {
		t.Errorf("no runtime: %v; want ErrWasmNeedsRuntime", err)
	}
	waitEnded(t, rt)
}

func TestBrokerCallbacksOverTheMux(t *testing.T) {
	c := startGuest(t, command(t, sharedRuntime()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	store := objectstorev1.NewObjectStoreClient(c.Conn())

	id := c.Broker().NextID()
	err := c.Broker().Serve(ctx, id, func(s *grpc.Server) {
		h := health.NewServer()
		h.SetServingStatus("host", healthpb.HealthCheckResponse_NOT_SERVING)
		healthpb.RegisterHealthServer(s, h)
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Init(ctx, &objectstorev1.InitRequest{Config: map[string]string{"dial": fmt.Sprint(id)}})
	if !strings.Contains(fmt.Sprint(err), "host says NOT_SERVING") {
		t.Errorf("guest calling back into the host: %v", err)
	}

	id = c.Broker().NextID()
	if _, err := store.Init(ctx, &objectstorev1.InitRequest{Config: map[string]string{"serve": fmt.Sprint(id)}}); err != nil {
		t.Fatal(err)
	}
	conn, err := c.Broker().Dial(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "plugin-callback"})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("host calling the guest's brokered service: %v %v", resp, err)
	}
}

// copyGuest copies the guest's module into a file of the test's own.
func copyGuest(t *testing.T) (path string, module []byte) {
	t.Helper()
	module, err := os.ReadFile(guestModule(t))
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(testutil.TempDir(t), "guest.wasm")
	if err := os.WriteFile(path, module, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, module
}

// TestUnchangedModuleNotReread: a start of an unpinned module whose file
// is unchanged neither reads it nor compares it again; a changed time
// makes the next start read it.
func TestUnchangedModuleNotReread(t *testing.T) {
	rt := sharedRuntime()
	path, _ := copyGuest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	before := wasmhost.Reads(rt)
	cmd := command(t, rt)
	cmd.Path = path
	for range 2 {
		if err := exists(startGuest(t, cmd), "yes"); err != nil {
			t.Fatal(err)
		}
	}
	if n := wasmhost.Reads(rt) - before; n != 1 {
		t.Errorf("the module file was read %d times by the runtime for two starts of the unchanged file; want 1", n)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if err := rt.CompileFile(ctx, path); err != nil {
		t.Fatal(err)
	}
	if n := wasmhost.Reads(rt) - before; n != 2 {
		t.Errorf("the module file was read %d times after its time changed; want 2", n)
	}
}

// TestPinnedModuleAlwaysChecked: a module rewritten in place with its
// modification time restored does not pass the pin of its old content.
func TestPinnedModuleAlwaysChecked(t *testing.T) {
	rt := sharedRuntime()
	path, module := copyGuest(t)
	sum := sha256.Sum256(module)
	cmd := command(t, rt)
	cmd.Path, cmd.SHA256 = path, hex.EncodeToString(sum[:])
	if err := exists(startGuest(t, cmd), "yes"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt([]byte{module[len(module)-1] ^ 0xff}, int64(len(module)-1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err = host.Start(ctx, cmd, host.Options{Versions: []int{1, 2}, Logger: testutil.Logger(t)})
	var ce *host.ChecksumError
	if !errors.As(err, &ce) {
		t.Fatalf("a module changed in place with its time restored, started with the old pin: %v; want a host.ChecksumError", err)
	}
}
