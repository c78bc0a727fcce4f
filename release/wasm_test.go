package release

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	_ "github.com/plugkit/plugkit/internal/testutil/wazeroversion" // the tests' compilation cache, under the version wasmcompile compiles for
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/wasmhost"
)

// moduleName is the file name of the memory example plugin's module in
// the tests' releases.
const moduleName = "objectstore-memory.wasm"

var wasmBuild struct {
	once        sync.Once
	path, cache string
	err         error
}

// memoryModule builds the memory example plugin for wasip1 once per test
// binary and returns it, with the tests' compilation cache holding it
// compiled (testutil.CompiledWasm; "" when there is none, and then the
// module is interpreted): the release's describe checks then compile
// nothing, which under the race detector takes minutes.
func memoryModule(t testing.TB) (path, cache string) {
	t.Helper()
	pluginBinary(t, "memory") // makes buildDir
	wasmBuild.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		wasmBuild.path = filepath.Join(buildDir, moduleName)
		if wasmBuild.err = testutil.BuildWasm(ctx, wasmBuild.path, "../examples/objectstore/plugins/memory"); wasmBuild.err == nil {
			wasmBuild.cache = testutil.CompiledWasm(ctx, wasmBuild.path)
		}
	})
	if wasmBuild.err != nil {
		t.Fatal(wasmBuild.err)
	}
	return wasmBuild.path, wasmBuild.cache
}

// sharedGuests is the runtime for modules that the tests share (see
// guests), closed by TestMain once they end.
var sharedGuests struct {
	once sync.Once
	rt   *wasmhost.Runtime
	err  error
}

// guests is the runtime for modules the tests give Install, Push and the
// manager: with the tests' compilation cache, or interpreting where there
// is none (as the plugkit command makes its own). One runtime for all of
// them, as a host has one: it loads the memory module once, where one
// runtime per call loaded it (from the cache, or compiling it under Wine)
// up to five times a test. It loads the module before it returns, so
// that no test's deadline (testCtx) runs while it does: on a loaded
// machine that took more than the minute a test has.
func guests(t testing.TB) host.GuestRunner {
	t.Helper()
	module, cache := memoryModule(t)
	sharedGuests.once.Do(func() {
		sharedGuests.rt = wasmhost.New(wasmhost.Config{CacheDir: cache, CacheBytes: testutil.WasmCacheBytes, Interpret: cache == ""})
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		sharedGuests.err = sharedGuests.rt.CompileFile(ctx, module)
	})
	if sharedGuests.err != nil {
		t.Fatalf("loading the memory module: %v", sharedGuests.err)
	}
	return sharedGuests.rt
}

// wasmReleaseDir lays out a release directory holding the module and,
// when native is set, the memory plugin's binary for this machine.
func wasmReleaseDir(t testing.TB, module string, native bool) string {
	t.Helper()
	dir := testutil.TempDir(t)
	if native {
		dir = releaseDir(t, pluginBinary(t, "memory"))
	}
	writeFile(t, filepath.Join(dir, "wasip1_wasm", filepath.Base(module)), readFile(t, module), 0o644)
	return dir
}

// otherPlatform is a platform other than this machine's, as releases
// name it.
func otherPlatform() string {
	if hostPlatform == "linux/arm64" {
		return "linux/amd64"
	}
	return "linux/arm64"
}

// pushMemoryWasm pushes the memory plugin as release 1.3.0 of repo: its
// module, and its binary for this machine when native is set.
func pushMemoryWasm(t testing.TB, repo *Repository, native bool) (Release, []crypto.PublicKey) {
	t.Helper()
	module, _ := memoryModule(t)
	return pushMemoryWasmDir(t, repo, wasmReleaseDir(t, module, native))
}

// pushMemoryWasmDir pushes dir, a release directory of the memory
// plugin's module, as release 1.3.0 of repo.
func pushMemoryWasmDir(t testing.TB, repo *Repository, dir string) (Release, []crypto.PublicKey) {
	t.Helper()
	rt := guests(t) // the module built before the push's deadline starts
	key, pub := newKey(t)
	rel, err := Push(testCtx(t), repo, Publication{Dir: dir, Version: "1.3.0", Key: key, Cookie: objectstore.Cookie, Guests: rt})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	return rel, pub
}

// TestPushRefusesMisplacedModules: push refuses a file that is not a
// module in wasip1_wasm/, a module in a native platform's directory, and
// a module not named .wasm, each saying where it belongs. No guest runs.
func TestPushRefusesMisplacedModules(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/memory", nil)
	key, _ := newKey(t)
	fakeModule := []byte("\x00asm\x01\x00\x00\x00")
	for _, tc := range []struct {
		name, file string
		data       []byte
		want       string
	}{
		{"not a module", "wasip1_wasm/objectstore-memory.wasm", []byte("#!/bin/sh\n"), "is not a WebAssembly module"},
		{"a module as a native build", "linux_arm64/objectstore-memory", fakeModule, "is a WebAssembly module in the directory of the native platform linux/arm64"},
		{"a module not named .wasm", "wasip1_wasm/objectstore-memory", fakeModule, "must be named NAME.wasm"},
	} {
		dir := testutil.TempDir(t)
		writeFile(t, filepath.Join(dir, tc.file), tc.data, 0o755)
		_, err := Push(testCtx(t), repo, Publication{Dir: dir, Version: "1.3.0", Key: key, Cookie: objectstore.Cookie})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := repo.target.Resolve(testCtx(t), "1.3.0"); err == nil {
		t.Errorf("a refused push tagged 1.3.0")
	}
}

// TestWasmReleaseLayout: a release with a native build and a module
// carries the module under platform wasip1/wasm, in one application/wasm
// layer named NAME.wasm, beside the native binary's layer.
func TestWasmReleaseLayout(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/memory", nil)
	rel, _ := pushMemoryWasm(t, repo, true)
	ctx := testCtx(t)
	if got := strings.Join(rel.Platforms, ","); got != strings.Join(sortedPlatforms(here, PlatformWasm), ",") {
		t.Fatalf("platforms %s, want this machine's and %s", got, PlatformWasm)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(fetchIndex(t, repo, rel), &idx); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range idx.Manifests {
		if m.Platform != nil && m.Platform.OS == "wasip1" && m.Platform.Architecture == "wasm" {
			found = true
		}
	}
	if !found {
		t.Errorf("the index has no manifest of platform os wasip1, architecture wasm: %+v", idx.Manifests)
	}
	l, err := binaryLayer(ctx, repo, rel, PlatformWasm)
	if err != nil {
		t.Fatal(err)
	}
	module, _ := memoryModule(t)
	if l.MediaType != "application/wasm" || fileName(l) != moduleName || l.Digest != digest.FromBytes(readFile(t, module)) {
		t.Errorf("module layer %+v; want %s, named %s, the module's digest", l, MediaTypeWasm, moduleName)
	}
	if l, err := binaryLayer(ctx, repo, rel, here); err != nil || l.MediaType != MediaTypeBinary {
		t.Errorf("native layer %+v, %v; want %s", l, err, MediaTypeBinary)
	}
}

// fetchIndex reads rel's index from repo.
func fetchIndex(t testing.TB, repo *Repository, rel Release) []byte {
	t.Helper()
	d, err := repo.target.Resolve(testCtx(t), rel.Version)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := fetchSmall(testCtx(t), repo, d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestInstallChoosesNativeOrModule: with a native build for this machine
// and a module, Install picks the native binary unless asked for the
// module (WasmPrefer, WasmOnly), and never installs the module with
// WasmNever.
func TestInstallChoosesNativeOrModule(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/memory", nil)
	rel, pub := pushMemoryWasm(t, repo, true)
	module, _ := memoryModule(t)
	for _, tc := range []struct {
		use      WasmUse
		platform string
		name     string
	}{
		{WasmFallback, here, "objectstore-memory" + exe()},
		{WasmNever, here, "objectstore-memory" + exe()},
		{WasmPrefer, PlatformWasm, moduleName},
		{WasmOnly, PlatformWasm, moduleName},
	} {
		dir := testutil.TempDir(t)
		inst, err := Install(testCtx(t), repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie, Wasm: tc.use, Guests: guests(t)})
		if err != nil {
			t.Fatalf("Wasm %d: %v", tc.use, err)
		}
		if inst.Platform != tc.platform || inst.Path != filepath.Join(dir, tc.name) {
			t.Errorf("Wasm %d installed %s (%s), want %s (%s)", tc.use, inst.Path, inst.Platform, tc.name, tc.platform)
		}
		if names := dirNames(t, dir); len(names) != 1 || names[0] != tc.name {
			t.Errorf("Wasm %d: the directory holds %v, want %s alone", tc.use, names, tc.name)
		}
		if tc.platform == PlatformWasm && string(readFile(t, inst.Path)) != string(readFile(t, module)) {
			t.Errorf("Wasm %d: the installed module differs from the published one", tc.use)
		}
	}
}

// dirNames lists dir's entries, the install lock file left out.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.Name() != lockFileName {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestInstallFallsBackToTheModule: on a machine the release has no
// native build for (it has one for another platform), Install installs
// NAME.wasm, describe-checked and verified against the lock file, which
// records the module's digest; a manager with a runtime (Finder.Guests)
// and the lock's pins dispenses it. WasmNever refuses it, and a lock with
// another module digest refuses the release.
func TestInstallFallsBackToTheModule(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/memory", nil)
	module, _ := memoryModule(t)
	dir := wasmReleaseDir(t, module, false)
	writeFile(t, filepath.Join(dir, platformDir(otherPlatform()), "objectstore-memory"), []byte("a binary for another machine"), 0o755)
	rel, pub := pushMemoryWasmDir(t, repo, dir)
	ctx := testCtx(t)
	lp, err := LockRelease(ctx, repo, rel, pub, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	lock := &Lock{}
	lock.Set(lp)
	if !strings.Contains(string(lock.Bytes()), "binary "+PlatformWasm+" "+moduleName+" "+digest.FromBytes(readFile(t, module)).String()) {
		t.Errorf("the lock file does not record the module's digest:\n%s", lock.Bytes())
	}
	dir = testutil.TempDir(t)
	if _, err := Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie, Wasm: WasmNever}); err == nil || !strings.Contains(err.Error(), "only a WebAssembly module") {
		t.Errorf("WasmNever without a native build: got %v, want the refusal naming the module", err)
	}
	wrong := lp
	wrong.Binaries = []LockedBinary{{Platform: PlatformWasm, Name: moduleName, Digest: digest.FromString("another module")}}
	if _, err := Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie, Locked: &wrong, Guests: guests(t)}); !errors.Is(err, ErrLockMismatch) {
		t.Errorf("a lock with another module digest: got %v, want ErrLockMismatch", err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("refused installs left %v", names)
	}

	inst, err := Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie, Locked: &lp, Guests: guests(t)})
	if err != nil {
		t.Fatal(err)
	}
	if inst.Platform != PlatformWasm || filepath.Base(inst.Path) != moduleName {
		t.Fatalf("installed %s (%s), want %s", inst.Path, inst.Platform, moduleName)
	}
	if fi, err := os.Stat(inst.Path); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o644) { // Windows has no mode bits
		t.Errorf("the module's mode: %v, %v; want 0644 (a module need not be executable)", fi, err)
	}
	pins := lock.Pins()
	if pins[moduleName] != inst.SHA256 {
		t.Errorf("the lock's pins %v lack the module's digest %s", pins, inst.SHA256)
	}
	dispenseModule(t, dir, pins)
}

// dispenseModule has a manager with a wasmhost runtime and pins find the memory
// module in dir and dispense it through the objectstore adapter.
func dispenseModule(t *testing.T, dir string, pins map[string]string) {
	t.Helper()
	rt := guests(t)
	ctx := testCtx(t)
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}, Guests: rt, Pins: pins}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := objectstore.Open(ctx, m, "example.com/memory")
	if err != nil {
		t.Fatal(err)
	}
	if info := s.Info(); info.Major != 1 || !info.Adapted || filepath.Base(info.Path) != moduleName {
		t.Errorf("dispensed %+v; want %s, major 1 through the adapter", info, moduleName)
	}
	if err := s.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "k"); err != nil || string(got) != "v" {
		t.Errorf("get: %q, %v", got, err)
	}
}

// TestWasmOnlyRelease: a release of a module alone is described through
// the module at push, mirrored with its module manifest, and installed
// from the mirror on this machine, which has no native build in it.
func TestWasmOnlyRelease(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/memory", nil)
	rel, pub := pushMemoryWasm(t, repo, false)
	if rel.Description.GetPluginVersion() != "1.3.0" || len(rel.Majors(objectstore.Kind)) != 1 || rel.Majors(objectstore.Kind)[0] != 1 {
		t.Fatalf("the release's metadata %v; want the module's own: 1.3.0, objectstore major 1", summary(rel.Description))
	}
	if strings.Join(rel.Platforms, ",") != PlatformWasm {
		t.Fatalf("platforms %v, want %s alone", rel.Platforms, PlatformWasm)
	}
	mirror, _ := mirrorTo(t, repo, "1.3.0")
	mrel, err := Fetch(testCtx(t), mirror, "1.3.0")
	if err != nil {
		t.Fatal(err)
	}
	dir := testutil.TempDir(t)
	inst, err := Install(testCtx(t), mirror, mrel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie, Guests: guests(t)})
	if err != nil {
		t.Fatal(err)
	}
	if inst.Platform != PlatformWasm || filepath.Base(inst.Path) != moduleName {
		t.Errorf("installed %s (%s) from the mirror, want %s", inst.Path, inst.Platform, moduleName)
	}
}

// TestLyingModuleRefused: a release whose metadata claims a major its
// module does not serve is refused after the module's describe check,
// and the module is removed.
func TestLyingModuleRefused(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/memory", nil)
	module, _ := memoryModule(t)
	rt := guests(t) // the module loaded before the test's deadline starts
	bins, err := scanDir(wasmReleaseDir(t, module, false))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	rel, err := pushRelease(ctx, repo, "1.3.0", bins, fakeDescription("1.3.0", 2), false)
	if err != nil {
		t.Fatal(err)
	}
	key, pub := newKey(t)
	if err := Sign(ctx, repo, rel.Digest, key); err != nil {
		t.Fatal(err)
	}
	dir := testutil.TempDir(t)
	_, err = Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie, Guests: rt})
	var me *MetadataError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "objectstore 2.0") || !strings.Contains(err.Error(), "objectstore 1.") {
		t.Fatalf("got %v, want a MetadataError naming the claimed major 2 and the served major 1", err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("the lying module was not removed: %v", names)
	}
}

// TestWasmUseChoosesThePlatform: each Target.Wasm choice against
// releases with a native build for this machine, a module, both or
// neither; a refusal names what the release has and what to do.
func TestWasmUseChoosesThePlatform(t *testing.T) {
	parallel(t)
	repo := &Repository{Source: "registry.example/plugins/memory"}
	rel := func(platforms ...string) Release {
		r := Release{Version: "1.3.0", manifests: map[string]ocispec.Descriptor{}}
		for _, p := range platforms {
			r.manifests[p] = ocispec.Descriptor{Digest: digest.FromString(p)}
			r.Platforms = append(r.Platforms, p)
		}
		return r
	}
	both, native, module, neither := rel(here, PlatformWasm), rel(here), rel(PlatformWasm), rel("plan9/mips")
	for _, tc := range []struct {
		use  WasmUse
		rel  Release
		want string // a platform, or part of the error
	}{
		{WasmFallback, both, here}, {WasmFallback, native, here}, {WasmFallback, module, PlatformWasm},
		{WasmFallback, neither, "no binary for " + here + " and no WebAssembly module (it has plan9/mips)"},
		{WasmPrefer, both, PlatformWasm}, {WasmPrefer, native, here}, {WasmPrefer, module, PlatformWasm},
		{WasmOnly, both, PlatformWasm}, {WasmOnly, module, PlatformWasm}, {WasmOnly, native, "has no WebAssembly module (" + PlatformWasm + "; it has " + here + "): install its native binary"},
		{WasmOnly, neither, "no binary for " + here + " and no WebAssembly module (it has plan9/mips): ask the publisher"},
		{WasmNever, both, here}, {WasmNever, native, here}, {WasmNever, module, "only a WebAssembly module (" + PlatformWasm + "): allow it"},
	} {
		got, err := tc.use.platform(repo, tc.rel)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) || (err != nil) != strings.Contains(tc.want, " ") {
			t.Errorf("Wasm %d, release of %v: got %q, want %q", tc.use, tc.rel.Platforms, got, tc.want)
		}
	}
}
