package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/conformance"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// binDir holds the binaries built once for all tests: the three example
// plugins and the broken memory variant.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "objectstore-matrix-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := testutil.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// build builds pkg into binDir/all/name, once per test binary (the
// first test to ask builds it, the others wait for it).
func build(t testing.TB, name, pkg string) string {
	t.Helper()
	out, err := buildOnce(filepath.Join(binDir, "all", name), func(out string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		return testutil.BuildBinary(ctx, out, pkg)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// builds holds each build the tests share, by its path under binDir.
var builds sync.Map

// built is one build, made once.
type built struct {
	once sync.Once
	path string
	err  error
}

// buildOnce runs do(out) the first time out is asked for and returns
// what it returned, then and every time after.
func buildOnce(out string, do func(out string) (string, error)) (string, error) {
	v, _ := builds.LoadOrStore(out, new(built))
	b := v.(*built)
	b.once.Do(func() { b.path, b.err = do(out) })
	return b.path, b.err
}

// parallel runs t beside the other parallel tests, except on Windows:
// there the tests run under Wine, which interprets the modules (no
// compilation cache) too slowly for them to share the machine within
// their deadlines.
func parallel(t *testing.T) {
	if runtime.GOOS != "windows" {
		t.Parallel()
	}
}

// pluginDir makes a directory holding links to the named builds.
func pluginDir(t testing.TB, bins map[string]string) string {
	t.Helper()
	dir := testutil.TempDir(t)
	for name, pkg := range bins {
		src := build(t, name, pkg)
		dst := filepath.Join(dir, strings.TrimSuffix(name, "-broken")+filepath.Ext(src)) // .exe on Windows
		if runtime.GOOS == "windows" {                                                   // symbolic links there take a privilege (and Wine's do not run)
			data, err := os.ReadFile(src)
			if err == nil {
				err = os.WriteFile(dst, data, 0o755)
			}
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.Symlink(src, dst); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var demoSet = map[string]string{
	"memory": "../../plugins/memory",
	"fs":     "../../plugins/fs",
	"future": "../../plugins/future",
}

func runMatrix(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := run(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func cellsOf(t *testing.T, out string) map[string]conformance.Cell {
	t.Helper()
	var cells []conformance.Cell
	if err := json.Unmarshal([]byte(out), &cells); err != nil {
		t.Fatalf("--json output is not a JSON array of cells: %v\n%s", err, out)
	}
	byKey := map[string]conformance.Cell{}
	for _, c := range cells {
		byKey[fmt.Sprintf("%s v%d", c.Plugin, c.HostMajor)] = c
	}
	return byKey
}

// TestMatrixDemoSet runs the matrix over the demo's three plugins and
// expects the cells: memory adapter on v2 and direct on v1, fs
// direct on both, future incompatible with the resolver's advice; exit 0.
func TestMatrixDemoSet(t *testing.T) {
	parallel(t)
	dir := pluginDir(t, demoSet)
	code, out, errOut := runMatrix(t, "--dir", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr: %s\n%s", code, errOut, out)
	}
	cells := cellsOf(t, out)
	want := map[string]conformance.Mode{
		"example.com/memory v2": conformance.ModeAdapter,
		"example.com/memory v1": conformance.ModeDirect,
		"example.com/fs v2":     conformance.ModeDirect,
		"example.com/fs v1":     conformance.ModeDirect,
		"example.com/future v2": conformance.ModeIncompatible,
		"example.com/future v1": conformance.ModeIncompatible,
	}
	if len(cells) != len(want) {
		t.Errorf("%d cells, want %d: %v", len(cells), len(want), cells)
	}
	suites := map[int]int{2: len(objectstore.SuiteV2().Cases), 1: len(objectstore.SuiteV1().Cases)}
	for k, mode := range want {
		c, ok := cells[k]
		if !ok {
			t.Errorf("no cell %s", k)
			continue
		}
		if c.Mode != mode {
			t.Errorf("%s: mode %s, want %s (failures %v)", k, c.Mode, mode, c.Failures)
		}
		if mode == conformance.ModeIncompatible {
			if !strings.Contains(c.Advice, `version = "~> 2.4.0"`) || c.Passed+c.Failed != 0 {
				t.Errorf("%s: advice %q, %d cases run; want the resolver's advice to select 2.4.0 and no cases", k, c.Advice, c.Passed+c.Failed)
			}
			continue
		}
		if c.Passed != suites[c.HostMajor] || c.Failed != 0 {
			t.Errorf("%s: %d passed, %d failed; want all %d of the v%d suite", k, c.Passed, c.Failed, suites[c.HostMajor], c.HostMajor)
		}
	}
	if c := cells["example.com/fs v2"]; c.Version != "2.1.0" || strings.TrimSuffix(filepath.Base(c.Binary), ".exe") != "fs" {
		t.Errorf("fs cell names version %q binary %q", c.Version, c.Binary)
	}

	code, text, _ := runMatrix(t, "--dir", dir)
	if code != 0 || !strings.Contains(text, "PLUGIN") || !strings.Contains(text, "adapter") || !strings.Contains(text, "~> 2.4.0") {
		t.Errorf("text output (exit %d):\n%s", code, text)
	}
	code, md, _ := runMatrix(t, "--dir", dir, "--markdown")
	memory := "memory"
	if runtime.GOOS == "windows" {
		memory += ".exe"
	}
	if code != 0 || !strings.Contains(md, "| `example.com/memory` | 1.3.0 | `"+memory+"` | v2 | adapter | 13 | 0 |") {
		t.Errorf("markdown output (exit %d):\n%s", code, md)
	}
}

// TestMatrixBrokenVariant swaps in a memory release whose Get returns
// other bytes: its cells turn failing, naming the case, and the exit
// status is 1; the fs plugin beside it still passes.
func TestMatrixBrokenVariant(t *testing.T) {
	parallel(t)
	dir := pluginDir(t, map[string]string{"memory-broken": "./testdata/brokenmemory", "fs": "../../plugins/fs"})
	code, out, errOut := runMatrix(t, "--dir", dir, "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr: %s\n%s", code, errOut, out)
	}
	cells := cellsOf(t, out)
	for _, k := range []string{"example.com/memory v2", "example.com/memory v1"} {
		c := cells[k]
		if c.Mode != conformance.ModeFailing || c.Failed == 0 {
			t.Errorf("%s: mode %s with %d failures, want failing", k, c.Mode, c.Failed)
			continue
		}
		named := false
		for _, f := range c.Failures {
			named = named || (f.Case == "put then get returns the bytes" && strings.Contains(f.Error, "differ"))
		}
		if !named {
			t.Errorf("%s: failures %v do not name \"put then get returns the bytes\"", k, c.Failures)
		}
	}
	if c := cells["example.com/memory v2"]; c.Via != conformance.ModeAdapter {
		t.Errorf("the broken memory failed on v2 via %q, want adapter", c.Via)
	}
	for _, k := range []string{"example.com/fs v2", "example.com/fs v1"} {
		if cells[k].Mode != conformance.ModeDirect {
			t.Errorf("%s: %s, want direct", k, cells[k].Mode)
		}
	}
}

// TestSuiteAgainstBinary runs the v2 suite against a built binary,
// dispensed from a manager over its directory, as a plugin repository's CI
// does after building.
func TestSuiteAgainstBinary(t *testing.T) {
	parallel(t)
	dir := pluginDir(t, map[string]string{"fs": "../../plugins/fs"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := objectstore.Open(ctx, m, "example.com/fs")
	if err != nil {
		t.Fatal(err)
	}
	objectstore.SuiteV2().Test(t, s)
}

// TestMatrixUsage: bad usage exits 2, an empty directory 1 with a reason.
func TestMatrixUsage(t *testing.T) {
	parallel(t)
	if code, _, errOut := runMatrix(t); code != 2 || !strings.Contains(errOut, "--dir is required") {
		t.Errorf("no --dir: exit %d, %q", code, errOut)
	}
	if code, _, _ := runMatrix(t, "--dir", testutil.TempDir(t), "--json", "--markdown"); code != 2 {
		t.Errorf("--json with --markdown: exit %d, want 2", code)
	}
	if code, _, errOut := runMatrix(t, "--dir", testutil.TempDir(t)); code != 1 || !strings.Contains(errOut, "no executable files") {
		t.Errorf("empty directory: exit %d, %q", code, errOut)
	}
	// The bound of a cache that is not there would be ignored in silence.
	if code, _, errOut := runMatrix(t, "--dir", testutil.TempDir(t), "--wasm-cache-bytes", "1000"); code != 2 || !strings.Contains(errOut, "give --wasm-cache DIR, or drop --wasm-cache-bytes") {
		t.Errorf("--wasm-cache-bytes without --wasm-cache: exit %d, %q; want 2 and the fix", code, errOut)
	}
}

// BenchmarkMatrixDemoSet times the matrix over the demo's three plugins
// (6 cells): as shipped, one process per binary reused across the host
// majors and binaries in parallel up to the CPU count; and two baselines,
// one binary at a time, and a process per cell (each host major its own
// Matrix run, so each binary is started once per host major).
func BenchmarkMatrixDemoSet(b *testing.B) {
	dir := pluginDir(b, demoSet)
	hosts := objectstore.MatrixHosts(false)
	matrix := func(par int, hosts ...conformance.Host) conformance.Matrix {
		return conformance.Matrix{Kind: objectstore.Kind, Cookie: objectstore.Cookie, Hosts: hosts, Releases: objectstore.Releases(), Parallelism: par}
	}
	for _, bc := range []struct {
		name     string
		matrices []conformance.Matrix
	}{
		{"shipped", []conformance.Matrix{matrix(0, hosts...)}},
		{"one-binary-at-a-time", []conformance.Matrix{matrix(1, hosts...)}},
		{"process-per-cell", []conformance.Matrix{matrix(0, hosts[0]), matrix(0, hosts[1])}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				for _, mx := range bc.matrices {
					cells, err := mx.Run(context.Background(), dir)
					if err != nil || conformance.Failing(cells) {
						b.Fatalf("failing %v, %v", conformance.Failing(cells), err)
					}
					n += len(cells)
				}
				if n != 6 {
					b.Fatalf("%d cells, want 6", n)
				}
			}
		})
	}
}

// TestMatrixUnusableBinary: a file that is no plugin fails its cells at
// "start", with the reason, and the exit status is 1.
func TestMatrixUnusableBinary(t *testing.T) {
	parallel(t)
	testutil.NotOnWindows(t, "its unusable binary is a shell script")
	dir := testutil.TempDir(t)
	// Written holding forks: a process a parallel test forks meanwhile
	// would hold it open for writing, and its start fail (ETXTBSY).
	if err := testutil.WriteHoldingForks(filepath.Join(dir, "stranger"), []byte("#!/bin/sh\necho 'not an object store' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runMatrix(t, "--dir", dir, "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", code, errOut)
	}
	cells := cellsOf(t, out)
	if len(cells) != 2 {
		t.Errorf("%d cells, want one per host major: %v", len(cells), cells)
	}
	for k, c := range cells {
		if c.Mode != conformance.ModeFailing || len(c.Failures) != 1 || c.Failures[0].Case != "start" || !strings.Contains(c.Failures[0].Error, "not an object store") {
			t.Errorf("%s: %+v, want failing at start with the binary's stderr", k, c)
		}
	}
}
