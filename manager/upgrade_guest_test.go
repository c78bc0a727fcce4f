package manager_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	_ "github.com/plugkit/plugkit/internal/testutil/wazeroversion" // the tests' compilation cache, under the version wasmcompile compiles for
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/wasmhost"
)

// TestUpgradeWasmGuest: a WebAssembly guest upgrades as a binary does. A
// new release of the module, renamed over the old one as plugkit install
// does, is compiled and described by the sources' Find, started beside
// the old guest, and takes the Conn's calls; the old guest drains and is
// gone when the upgrade completes.
func TestUpgradeWasmGuest(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := testutil.TempDir(t)
	guests, install := memoryReleases(ctx, t, dir)
	install("1.3.0")
	ev := newEvents()
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}, Guests: guests}
	m := newManager(t, manager.Config{
		Sources:   []manager.Source{finder.Dirs(dir)},
		Upgrade:   manager.UpgradePolicy{Probation: 100 * time.Millisecond},
		Telemetry: host.Telemetry{OnEvent: ev.on},
	})
	conn, info := store(t, m, "example.com/memory")
	if info.PluginVersion != "1.3.0" {
		t.Fatalf("dispensed v%s; want the first release, 1.3.0", info.PluginVersion)
	}
	cl := objectstorev1.NewObjectStoreClient(conn)
	if _, err := cl.Exists(ctx, &objectstorev1.ExistsRequest{Key: "k"}); err != nil {
		t.Fatal(err)
	}

	install("1.4.0")
	res, err := m.Upgrade(ctx, "objectstore", "example.com/memory")
	if err != nil || res.Outcome != manager.UpgradeCompleted || res.From.Version != "1.3.0" || res.To.Version != "1.4.0" {
		t.Fatalf("Upgrade: %+v, %v; want completed from 1.3.0 to 1.4.0", res, err)
	}
	ev.wait(t, manager.EventUpgradeCompleted)
	if _, err := cl.Exists(ctx, &objectstorev1.ExistsRequest{Key: "k"}); err != nil {
		t.Fatalf("a call after the upgrade: %v", err)
	}
	st := m.Status()
	if len(st) != 1 || st[0].Serving.Version != "1.4.0" || len(st[0].Draining) != 0 {
		t.Errorf("Status after the upgrade: %+v; want 1.4.0 serving and nothing draining", st)
	}
}

// builtReleases are memoryReleases' modules, built once per test binary
// (each test only reads them) in dir, which TestMain removes, and the
// Runtime that runs them for every test, which TestMain closes: a
// Runtime's first start of each module loads it from the compilation
// cache, seconds of CPU under the race detector, which a Runtime per test
// paid again. Its guests have 32 MiB of memory (guestMemory), which
// TestRestartRunsOnlyTheDescribedModule's Put passes.
var builtReleases struct {
	once    sync.Once
	dir     string
	modules map[string]string
	cache   string
	guests  *wasmhost.Runtime
	err     error
}

// guestMemory is the memory limit of builtReleases' guests.
const guestMemory = 32 << 20

// closeReleases removes builtReleases' modules and closes their Runtime
// (TestMain, after the tests).
func closeReleases() {
	if b := &builtReleases; b.dir != "" {
		if b.guests != nil {
			b.guests.Close(context.Background())
		}
		os.RemoveAll(b.dir)
	}
}

// memoryModules builds the memory example's module as releases 1.3.0 and
// 1.4.0, once per test binary, and returns them by version, with the
// Runtime that runs them (over the compilation cache holding both).
func memoryModules(ctx context.Context, t *testing.T) (map[string]string, *wasmhost.Runtime) {
	t.Helper()
	b := &builtReleases
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "manager-wasm-"); b.err != nil {
			return
		}
		const pkg = "../examples/objectstore/plugins/memory"
		b.modules = map[string]string{"1.3.0": filepath.Join(b.dir, "v13.wasm"), "1.4.0": filepath.Join(b.dir, "v14.wasm")}
		if b.err = testutil.BuildWasm(ctx, b.modules["1.3.0"], pkg); b.err != nil {
			return
		}
		if b.err = testutil.BuildWasm(ctx, b.modules["1.4.0"], pkg, "-ldflags=-X main.version=1.4.0"); b.err != nil {
			return
		}
		b.cache = testutil.CompiledWasm(ctx, b.modules["1.3.0"], b.modules["1.4.0"])
		b.guests = wasmhost.New(wasmhost.Config{MemoryLimit: guestMemory, CacheDir: b.cache, CacheBytes: testutil.WasmCacheBytes})
		// Loaded here, once: two tests starting them at once would each
		// load them.
		for _, v := range []string{"1.3.0", "1.4.0"} {
			if b.err = b.guests.CompileFile(ctx, b.modules[v]); b.err != nil {
				return
			}
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.modules, b.guests
}

// memoryReleases builds two releases of the memory example's module,
// 1.3.0 and 1.4.0, and returns the Runtime that runs them (guests of
// guestMemory, shared by the tests: builtReleases) and the function that
// installs a release as dir/memory.wasm, renamed into place over the
// one there as plugkit install does.
func memoryReleases(ctx context.Context, t *testing.T, dir string) (*wasmhost.Runtime, func(version string)) {
	t.Helper()
	if testutil.UnderWine() {
		t.Skip("it builds two releases of a module with the Go tool, which does not run under Wine")
	}
	modules, guests := memoryModules(ctx, t)
	return guests, func(version string) {
		t.Helper()
		b, err := os.ReadFile(modules[version])
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, ".memory.wasm.tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "memory.wasm")); err != nil {
			t.Fatal(err)
		}
	}
}
