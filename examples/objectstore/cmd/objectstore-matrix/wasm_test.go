package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/conformance"
	"github.com/plugkit/plugkit/examples/objectstore"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	_ "github.com/plugkit/plugkit/internal/testutil/wazeroversion" // the tests' compilation cache, under the version wasmcompile compiles for
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/wasmhost"
)

// buildWasm builds pkg for wasip1 into binDir/wasm/name, once per test
// binary, readable but not executable (a module need not be).
func buildWasm(t testing.TB, name, pkg string) string {
	t.Helper()
	out, err := buildOnce(filepath.Join(binDir, "wasm", name), func(out string) (string, error) {
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := testutil.BuildWasm(ctx, out, pkg); err != nil {
			return "", err
		}
		return out, os.Chmod(out, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// compiled is the tests' compilation cache (testutil.CompiledWasm) once
// it holds the memory and fs modules, found once per test binary: "" when
// there is none.
var compiled struct {
	once sync.Once
	dir  string
}

// wasmCache returns the compilation cache holding the memory and fs
// modules compiled (compiling two 30 MB modules takes long in a test,
// minutes under the race detector), or "" when there is none: interpret
// them then. The cache is keyed by a module's bytes, so it serves the
// tests' copies of the modules too.
func wasmCache(t testing.TB) string {
	t.Helper()
	modules := []string{buildWasm(t, "memory.wasm", "../../plugins/memory"), buildWasm(t, "fs.wasm", "../../plugins/fs")}
	compiled.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		compiled.dir = testutil.CompiledWasm(ctx, modules...)
	})
	return compiled.dir
}

// wasmConfig runs the modules compiled from the tests' compilation cache
// (wasmCache), or interpreted without one.
func wasmConfig(t testing.TB) wasmhost.Config {
	if dir := wasmCache(t); dir != "" {
		return wasmhost.Config{CacheDir: dir, CacheBytes: testutil.WasmCacheBytes}
	}
	return wasmhost.Config{Interpret: true}
}

// copyInto copies the file src into dir.
func copyInto(t testing.TB, dir, src string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, filepath.Base(src)), data, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestMatrixWasm: the memory and fs plugins built as WebAssembly modules
// appear in the matrix beside the native memory binary, with the same
// cells: memory through the adapter on v2 and direct on v1, fs direct on
// both, every case of both suites passing. The fs module makes its stores
// in the matrix's Scratch, granted to it at conformance.GuestScratch (a
// "/"-separated path, so Windows hosts too). Under Wine the fs module is
// left out: a guest's delete in a granted directory fails there (os.Root's
// Remove: "I/O error"), and the fs suites delete.
func TestMatrixWasm(t *testing.T) {
	parallel(t)
	dir := pluginDir(t, map[string]string{"memory": "../../plugins/memory"})
	copyInto(t, dir, buildWasm(t, "memory.wasm", "../../plugins/memory"))
	withFS := !testutil.UnderWine()
	if withFS {
		copyInto(t, dir, buildWasm(t, "fs.wasm", "../../plugins/fs"))
	}
	// The command's Matrix, with the modules compiled from the tests'
	// cache (wasmConfig), and the fs plugin granted the matrix's scratch
	// (without it, its Init fails: isolation at work).
	scratch := testutil.TempDir(t)
	wc := wasmConfig(t)
	wc.Dirs = []wasmhost.Dir{{HostPath: scratch, GuestPath: conformance.GuestScratch, Writable: true}}
	guests := wasmhost.New(wc)
	defer guests.Close(context.Background())
	mx := conformance.Matrix{Kind: objectstore.Kind, Cookie: objectstore.Cookie, Releases: objectstore.Releases(),
		Hosts: objectstore.MatrixHosts(false), Guests: guests, Scratch: scratch}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cells, err := mx.Run(ctx, dir)
	if err != nil || conformance.Failing(cells) {
		t.Errorf("matrix: failing %v, %v", conformance.Failing(cells), err)
	}
	want := map[string]conformance.Mode{
		"memory v2": conformance.ModeAdapter, "memory v1": conformance.ModeDirect,
		"memory.wasm v2": conformance.ModeAdapter, "memory.wasm v1": conformance.ModeDirect,
	}
	if withFS {
		want["fs.wasm v2"], want["fs.wasm v1"] = conformance.ModeDirect, conformance.ModeDirect
	}
	suites := map[int]int{2: len(objectstore.SuiteV2().Cases), 1: len(objectstore.SuiteV1().Cases)}
	got := map[string]conformance.Cell{}
	for _, c := range cells {
		got[fmt.Sprintf("%s v%d", strings.TrimSuffix(filepath.Base(c.Binary), ".exe"), c.HostMajor)] = c
	}
	if len(got) != len(want) {
		t.Errorf("cells %v, want %d", got, len(want))
	}
	for k, mode := range want {
		c, ok := got[k]
		if !ok {
			t.Errorf("no cell %s", k)
			continue
		}
		if c.Mode != mode || c.Passed != suites[c.HostMajor] || c.Failed != 0 {
			t.Errorf("%s: mode %s, %d passed, %d failed (%v); want %s and all %d cases", k, c.Mode, c.Passed, c.Failed, c.Failures, mode, suites[c.HostMajor])
		}
	}
}

// TestManagerWasm: a manager discovers a .wasm beside a binary in a
// plugin directory, describes it (by its describe line, as the binary:
// no Describe call over gRPC), dispenses it through the adapter, and says
// what to do with a .wasm file that is not a module.
func TestManagerWasm(t *testing.T) {
	parallel(t)
	dir := pluginDir(t, map[string]string{"fs": "../../plugins/fs"})
	copyInto(t, dir, buildWasm(t, "memory.wasm", "../../plugins/memory"))
	if err := os.WriteFile(filepath.Join(dir, "bogus.wasm"), []byte("not a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheFile := filepath.Join(testutil.TempDir(t), "cache.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var describeCalls atomic.Int32
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if method == catalogv1.Catalog_Describe_FullMethodName {
			describeCalls.Add(1)
		}
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	guests := wasmhost.New(wasmConfig(t))
	defer guests.Close(context.Background())
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}, CacheFile: cacheFile, Guests: guests,
		Host: host.Options{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(count)}}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	if n := describeCalls.Load(); n != 0 {
		t.Errorf("%d Describe calls over gRPC during Discover; want 0: catalog plugins, memory.wasm too, write their description", n)
	}
	for _, b := range m.Entries() {
		switch filepath.Base(b.Path) {
		case "bogus.wasm":
			if b.Err == nil || !strings.Contains(b.Err.Error(), "GOOS=wasip1") {
				t.Errorf("bogus.wasm: %v; want an error saying how to build a module", b.Err)
			}
		case "memory.wasm":
			if b.Err != nil || b.Description.GetPluginVersion() != "1.3.0" {
				t.Errorf("memory.wasm: %v, version %q", b.Err, b.Description.GetPluginVersion())
			}
		}
	}
	s, err := objectstore.Open(ctx, m, "example.com/memory")
	if err != nil {
		t.Fatal(err)
	}
	if info := s.Info(); info.Major != 1 || !info.Adapted {
		t.Errorf("memory.wasm dispensed as %+v; want major 1 through the adapter", info)
	}
	objectstore.SuiteV2().Test(t, s)
}

// TestMatrixCommandWasm: the objectstore-matrix command, as a user runs
// it, tests the fs plugin's module: it grants the module a scratch
// directory of its own where the suites make the stores, and every case
// of both suites passes (they had all failed in Init: "mkdir /tmp: Bad
// file number", the suite handing the module a host path it had no grant
// for). --wasm-cache takes the tests' compilation cache, and
// --wasm-cache-bytes its bound (at the default, 2 GiB, the run trimmed
// the cache every checkout's tests share, removing their guests).
func TestMatrixCommandWasm(t *testing.T) {
	parallel(t)
	if testutil.UnderWine() {
		t.Skip("a guest's delete in a granted directory fails under Wine (os.Root's Remove: I/O error), and the fs suites delete; TestMatrixWasmWithoutGrant runs the fs module there")
	}
	dir := testutil.TempDir(t)
	copyInto(t, dir, buildWasm(t, "fs.wasm", "../../plugins/fs"))
	args := []string{"--dir", dir, "--json"}
	if cache := wasmCache(t); cache != "" {
		args = append(args, "--wasm-cache", cache, "--wasm-cache-bytes", strconv.Itoa(testutil.WasmCacheBytes))
	}
	code, out, errOut := runMatrix(t, args...)
	if code != 0 {
		t.Errorf("exit %d, want 0; stderr: %s\n%s", code, errOut, out)
	}
	cells := cellsOf(t, out)
	suites := map[int]int{2: len(objectstore.SuiteV2().Cases), 1: len(objectstore.SuiteV1().Cases)}
	for _, k := range []string{"example.com/fs v2", "example.com/fs v1"} {
		c, ok := cells[k]
		if !ok {
			t.Errorf("no cell %s in %v", k, cells)
			continue
		}
		if c.Mode != conformance.ModeDirect || c.Passed != suites[c.HostMajor] || c.Failed != 0 {
			t.Errorf("%s: mode %s, %d passed, %d failed (%v); want direct and all %d cases", k, c.Mode, c.Passed, c.Failed, c.Failures, suites[c.HostMajor])
		}
	}
}

// TestMatrixWasmWithoutGrant: a Matrix that does not give the fs module a
// directory fails its cells saying which grant is missing, not "Bad file
// number": without Scratch, the suite's TempDir names Matrix.Scratch and
// conformance.GuestScratch; with Scratch set but not granted to the
// runtime, the plugin's Init names the directory and the grant.
func TestMatrixWasmWithoutGrant(t *testing.T) {
	parallel(t)
	dir := testutil.TempDir(t)
	copyInto(t, dir, buildWasm(t, "fs.wasm", "../../plugins/fs"))
	guests := wasmhost.New(wasmConfig(t)) // grants nothing
	defer guests.Close(context.Background())
	for _, tc := range []struct {
		name, scratch string
		want          []string
	}{
		{"no scratch", "", []string{"fs.wasm is a WebAssembly module", "Matrix.Scratch is empty", conformance.GuestScratch}},
		{"scratch not granted", testutil.TempDir(t), []string{"is in no directory granted to this WebAssembly plugin", "--grant-rw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mx := conformance.Matrix{Kind: objectstore.Kind, Cookie: objectstore.Cookie, Hosts: objectstore.MatrixHosts(false), Guests: guests, Scratch: tc.scratch}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cells, err := mx.Run(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(cells) != 2 {
				t.Fatalf("%d cells, want 2: %v", len(cells), cells)
			}
			for _, c := range cells {
				if c.Mode != conformance.ModeFailing || len(c.Failures) == 0 {
					t.Errorf("v%d: %s, want failing", c.HostMajor, c.Mode)
					continue
				}
				for _, f := range c.Failures {
					for _, w := range tc.want {
						if !strings.Contains(f.Error, w) {
							t.Errorf("v%d %s: %q does not say %q", c.HostMajor, f.Case, f.Error, w)
						}
					}
				}
			}
		})
	}
}
