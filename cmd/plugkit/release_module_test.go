package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/release"
)

// TestReleaseWasmCLI: release push publishes DIR/wasip1_wasm/NAME.wasm
// beside the native build (1.3.0); install --wasm only passes over a newer
// release without a module (2.1.0, the fs plugin's binary alone), installs
// 1.3.0's module (compiled into --wasm-cache for its check) and locks it
// with every platform; with a constraint leaving only 2.1.0 it fails
// naming it, what it has and what to do; lock --platform wasip1/wasm
// records 1.3.0's module alone; an unknown --wasm is refused. It runs
// beside the parallel tests: it writes no executable (its builds are
// links to the shared ones, its install a module), so no process they
// fork can hold one of its files open for writing (ETXTBSY).
func TestReleaseWasmCLI(t *testing.T) {
	t.Parallel()
	registry, work, keyFile, pubFile := releaseWork(t)
	here := runtime.GOOS + "/" + runtime.GOARCH
	dist := filepath.Join(work, "dist")
	goBuild(t, filepath.Join(dist, strings.ReplaceAll(here, "/", "_")), "objectstore-memory", "../../examples/objectstore/plugins/memory")
	module := filepath.Join(dist, "wasip1_wasm", "objectstore-memory.wasm")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := os.MkdirAll(filepath.Dir(module), 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.GoBuildWasm(ctx, t, module, "../../examples/objectstore/plugins/memory")
	cache := testutil.CompiledWasm(ctx, module) // "" interprets the module: slow under -race, still correct

	src := registry + "/plugins/memory"
	const cookie = "PLUGKIT_EXAMPLE_PLUGIN=objectstore"
	out := mustRun(t, 0, append([]string{"release", "push", dist, "--ref", src + ":1.3.0", "--key", keyFile, "--cookie", cookie, "--plain-http"}, wasmCacheArgs(cache)...)...)
	if !strings.Contains(out, release.PlatformWasm) {
		t.Errorf("push: %s; want the platform %s listed", out, release.PlatformWasm)
	}
	newer := filepath.Join(work, "dist-2.1.0")
	goBuild(t, filepath.Join(newer, strings.ReplaceAll(here, "/", "_")), "objectstore-fs", "../../examples/objectstore/plugins/fs")
	mustRun(t, 0, "release", "push", newer, "--ref", src+":2.1.0", "--key", keyFile, "--cookie", cookie, "--plain-http")
	dir, lockFile := filepath.Join(work, "plugins"), filepath.Join(work, "plugkit.lock")
	common := []string{"install", src, "--kind", "objectstore", "--majors", "1", "--dir", dir, "--key", pubFile, "--cookie", cookie, "--plain-http", "--lock", lockFile}
	out = mustRun(t, 1, append(common, "--wasm", "sometimes")...)
	if !strings.Contains(out, `--wasm "sometimes"`) {
		t.Errorf("--wasm sometimes: %s", out)
	}
	out = mustRun(t, 1, append(common, "--wasm", "only", "--constraint", ">= 2.0")...)
	for _, want := range []string{"Skipped: v2.1.0 (it has " + here + ")", "--wasm fallback"} {
		if !strings.Contains(out, want) {
			t.Errorf("install --wasm only --constraint \">= 2.0\": %s; want it to say %q", out, want)
		}
	}
	out = mustRun(t, 0, append(append(common, "--wasm", "only"), wasmCacheArgs(cache)...)...)
	if !strings.Contains(out, " v1.3.0 ") || !strings.Contains(out, "objectstore-memory.wasm") || !strings.Contains(out, release.PlatformWasm) {
		t.Errorf("install --wasm only: %s; want v1.3.0's module, 2.1.0 (no module) passed over", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "objectstore-memory.wasm")); err != nil {
		t.Errorf("install --wasm only: %v", err)
	}
	lock, err := release.ReadLock(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	if lp := lock.Find(src); lp == nil || len(lp.Binaries) != 2 || !strings.Contains(string(lock.Bytes()), "binary "+release.PlatformWasm+" objectstore-memory.wasm sha256:") {
		t.Errorf("lock file after install:\n%s", lock.Bytes())
	}
	lock2 := filepath.Join(work, "module.lock")
	mustRun(t, 0, "lock", "--lock", lock2, "--key", pubFile, "--platform", release.PlatformWasm, src, "--kind", "objectstore", "--majors", "1", "--plain-http")
	l2, err := release.ReadLock(lock2)
	if err != nil {
		t.Fatal(err)
	}
	if lp := l2.Find(src); lp == nil || lp.Version != "1.3.0" || len(lp.Binaries) != 1 || lp.Binaries[0].Platform != release.PlatformWasm {
		t.Errorf("lock --platform %s: want 1.3.0's module, 2.1.0 (no module) passed over:\n%s", release.PlatformWasm, l2.Bytes())
	}
}
