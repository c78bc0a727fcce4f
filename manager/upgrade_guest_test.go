package manager_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/wasmhost"
)

// TestUpgradeWasmGuest: a WebAssembly guest upgrades as a binary does. A
// new release of the module, renamed over the old one as plugkit install
// does, is compiled and described by the sources' Find, started beside
// the old guest, and takes the Conn's calls; the old guest drains and is
// gone when the upgrade completes.
func TestUpgradeWasmGuest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := testutil.TempDir(t)
	guests, install := memoryReleases(ctx, t, dir, wasmhost.Config{})
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

// memoryReleases builds two releases of the memory example's module,
// 1.3.0 and 1.4.0, and returns a runtime (cfg, with a compilation cache
// of both; closed after the test's Manager) and the function that
// installs a release as dir/memory.wasm, renamed into place over the
// one there as plugkit install does.
func memoryReleases(ctx context.Context, t *testing.T, dir string, cfg wasmhost.Config) (*wasmhost.Runtime, func(version string)) {
	t.Helper()
	if testutil.UnderWine() {
		t.Skip("it builds two releases of a module with the Go tool, which does not run under Wine")
	}
	build := testutil.TempDir(t)
	const pkg = "../examples/objectstore/plugins/memory"
	modules := map[string]string{
		"1.3.0": testutil.GoBuildWasm(ctx, t, filepath.Join(build, "v13.wasm"), pkg),
		"1.4.0": testutil.GoBuildWasm(ctx, t, filepath.Join(build, "v14.wasm"), pkg, "-ldflags=-X main.version=1.4.0"),
	}
	cfg.CacheDir = testutil.CompiledWasm(ctx, modules["1.3.0"], modules["1.4.0"])
	guests := wasmhost.New(cfg)
	t.Cleanup(func() { guests.Close(context.Background()) }) // after the Manager's Close
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
