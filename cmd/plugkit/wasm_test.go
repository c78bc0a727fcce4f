package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
	_ "github.com/plugkit/plugkit/internal/testutil/wazeroversion" // the tests' compilation cache, under the version wasmcompile compiles for
)

// fsModule is the fs example plugin built for wasip1, once per test
// binary, and the compilation cache that holds it compiled ("" when there
// is none: the CLI then interprets it).
var fsModule struct {
	once             sync.Once
	dir, path, cache string
	err              error
}

// buildFSModule returns the fs plugin's module and its --wasm-cache flags
// (none without a cache).
func buildFSModule(t *testing.T) (string, []string) {
	t.Helper()
	fsModule.once.Do(func() {
		fsModule.dir, fsModule.err = os.MkdirTemp("", "plugkit-cli-wasm-") // removed by TestMain
		if fsModule.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		fsModule.path = filepath.Join(fsModule.dir, "fs.wasm")
		if fsModule.err = testutil.BuildWasm(ctx, fsModule.path, "../../examples/objectstore/plugins/fs"); fsModule.err == nil {
			fsModule.cache = testutil.CompiledWasm(ctx, fsModule.path)
		}
	})
	if fsModule.err != nil {
		t.Fatal(fsModule.err)
	}
	if fsModule.cache == "" {
		return fsModule.path, nil
	}
	return fsModule.path, wasmCacheArgs(fsModule.cache)
}

const fsCookie = "PLUGKIT_EXAMPLE_PLUGIN=objectstore"

// wasmCacheArgs are the flags that give the CLI the tests' compilation
// cache (testutil.CompiledWasm) with its bound: at the CLI's default
// (2 GiB) each command trimmed the cache that every checkout's tests
// share, removing guests that a run then compiled again. Without a cache
// ("") there are none: the CLI interprets the module.
func wasmCacheArgs(cache string) []string {
	if cache == "" {
		return nil
	}
	return []string{"--wasm-cache", cache, "--wasm-cache-bytes", strconv.Itoa(testutil.WasmCacheBytes)}
}

// TestInspectWasm: inspect runs the fs example's WebAssembly module as it
// runs a binary (it had refused it: "set Command.Runner to a runtime"),
// lists its services, and says it ran inside plugkit.
func TestInspectWasm(t *testing.T) {
	t.Parallel()
	module, cache := buildFSModule(t)
	var stdout, stderr strings.Builder
	if code := run(append([]string{"inspect", module, "--cookie", fsCookie, "--timeout", "2m", "--json"}, cache...), &stdout, &stderr); code != 0 {
		t.Fatalf("inspect --json of fs.wasm: exit %d, want 0\n%s", code, stderr.String())
	}
	var got inspection
	if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, stdout.String())
	}
	if !got.Wasm || got.Pid != 0 || !strings.Contains(strings.Join(got.Services, " "), "objectstore.v2.ObjectStore") {
		t.Errorf("inspect --json of fs.wasm: %+v; want wasm, pid 0 and objectstore.v2.ObjectStore among the services", got)
	}
	// The text is the same inspection printed (printInspection), which
	// the native tests check through the CLI: one start of the module,
	// not a second.
	var text strings.Builder
	printInspection(&text, got, false, "")
	if out := text.String(); !strings.Contains(out, "a WebAssembly module, run inside plugkit") || !strings.Contains(out, "objectstore.v1.ObjectStore") {
		t.Errorf("inspect of fs.wasm:\n%s", out)
	}
}

// TestCallWasm: call drives the fs example's WebAssembly module in a
// directory granted with --grant-rw (at a guest path of its own, as a
// Windows host needs): it lists and reads an object the host wrote and
// copies it, the copy landing in the host directory; in a directory
// granted with --grant (read-only) beside it, the same copy fails as a
// read-only file system (both in one run: one start of the module); with
// no grant the plugin's error names the missing grant instead of "Bad
// file number"; the flags are refused for a native plugin.
func TestCallWasm(t *testing.T) {
	t.Parallel()
	module, cache := buildFSModule(t)
	data, readOnly := testutil.TempDir(t), testutil.TempDir(t)
	for _, dir := range []string{data, readOnly} {
		if err := os.MkdirAll(filepath.Join(dir, "store"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "store", "hello"), []byte("hi"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const svc = "objectstore.v2.ObjectStore/"
	calls := []string{svc + "Init", `{"config":{"dir":"/data/store"}}`, svc + "List", "{}", svc + "Get", `{"key":"hello"}`, svc + "Copy", `{"source":"hello","destination":"copy"}`}
	common := append([]string{"call", module, "--cookie", fsCookie, "--timeout", "2m", "--compact"}, cache...)

	// The calls in the writable directory, then the copy again in the
	// read-only one, which fails and ends the run (call 6 of 6).
	inReadOnly := []string{svc + "Init", `{"config":{"dir":"/ro/store"}}`, svc + "Copy", `{"source":"hello","destination":"copy"}`}
	out := mustRun(t, 1, append(append(common, "--grant-rw", data+"=/data", "--grant", readOnly+"=/ro"), append(calls, inReadOnly...)...)...)
	for _, want := range []string{`"keys":["hello"]`, `"chunk":"aGk="`} {
		if !strings.Contains(out, want) {
			t.Errorf("call with --grant-rw: %s; want %s", out, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(data, "store", "copy")); err != nil || string(b) != "hi" {
		t.Errorf("the copy in the granted directory: %q, %v; want \"hi\"", b, err)
	}
	if !strings.Contains(out, "call 6 of 6") || !strings.Contains(strings.ToLower(out), "read-only file system") {
		t.Errorf("call with --grant (read-only): %s; want the copy refused as a read-only file system", out)
	}
	if _, err := os.Stat(filepath.Join(readOnly, "store", "copy")); !os.IsNotExist(err) {
		t.Errorf("the copy in the read-only directory: %v; want none", err)
	}

	out = mustRun(t, 1, append(common, calls[:2]...)...)
	if !strings.Contains(out, "/data/store is in no directory granted to this WebAssembly plugin") || !strings.Contains(out, "--grant-rw") {
		t.Errorf("call with no grant: %s; want the plugin to name the directory and the grant it lacks", out)
	}

	native := filepath.Join(testutil.TempDir(t), "native")
	if err := os.WriteFile(native, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out = mustRun(t, 2, "call", native, "--cookie", fsCookie, "--grant", data, svc+"List")
	if !strings.Contains(out, "are for a WebAssembly plugin") || !strings.Contains(out, "drop them") {
		t.Errorf("--grant for a native plugin: %s", out)
	}
}

// TestWasmCacheBytes: --wasm-cache-bytes is the bound the CLI keeps
// --wasm-cache within, which it trims when it opens it: the compiled
// modules used longest ago go until the rest fit (there was no such flag,
// and the CLI trimmed a cache shared with a host, or with the tests, to
// its own default of 2 GiB). Without the flag, the default bound keeps
// every module here; without --wasm-cache, the flag is refused.
func TestWasmCacheBytes(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	// A module that compiles at once, in no time, which is no plugin:
	// the start fails after the compile has opened (and trimmed) the
	// cache.
	module := filepath.Join(testutil.TempDir(t), "empty.wasm")
	if err := os.WriteFile(module, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheOf := func() (dir string, entries []string) {
		dir = testutil.TempDir(t)
		return dir, fillCompileCache(t, dir)
	}
	inspect := func(args ...string) (int, string) {
		var stdout, stderr strings.Builder
		code := run(append([]string{"inspect", module, "--cookie", fsCookie, "--timeout", "1m"}, args...), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}

	dir, entries := cacheOf()
	if code, out := inspect("--wasm-cache", dir, "--wasm-cache-bytes", strconv.Itoa(5*mib/2)); code == 0 || code == 2 {
		t.Fatalf("inspect of an empty module: exit %d, want 1 (no plugin)\n%s", code, out)
	}
	checkKept(t, "--wasm-cache-bytes 2.5 MiB", entries, 2)

	dir, entries = cacheOf()
	inspect("--wasm-cache", dir)
	checkKept(t, "no --wasm-cache-bytes (the default bound)", entries, 4)

	code, out := inspect("--wasm-cache-bytes", "1000")
	if code != 2 || !strings.Contains(out, "give --wasm-cache DIR, or drop --wasm-cache-bytes") {
		t.Errorf("--wasm-cache-bytes without --wasm-cache: exit %d, %s; want 2 and what to do", code, out)
	}
}

// TestParseGrant: --grant's DIR and DIR=/PATH forms.
func TestParseGrant(t *testing.T) {
	for in, want := range map[string][2]string{
		"/srv/data":         {"/srv/data", ""},
		"/srv/data=/data":   {"/srv/data", "/data"},
		`C:\data=/data`:     {`C:\data`, "/data"},
		"/a=b/c":            {"/a=b/c", ""},
		"/srv/x=y=/data/in": {"/srv/x=y", "/data/in"},
	} {
		d, err := parseGrant(in)
		if err != nil || d.HostPath != want[0] || d.GuestPath != want[1] {
			t.Errorf("parseGrant(%q) = %+v, %v; want host %q guest %q", in, d, err, want[0], want[1])
		}
	}
	if _, err := parseGrant("=/data"); err == nil || !strings.Contains(err.Error(), "DIR=/PATH") {
		t.Errorf("parseGrant(\"=/data\"): %v; want it refused, saying the form", err)
	}
}

// plugins list bounds the compiled modules it keeps beside --cache by
// --wasm-cache-bytes, as install bounds the --wasm-cache it fills for
// the same host: at its default it removed what a host allowing itself
// more had compiled there.
func TestPluginsWasmCacheBytes(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	// A module that compiles at once and is no plugin: the list finds it
	// unusable after its compile has opened (and trimmed) the cache.
	dir := testutil.TempDir(t)
	if err := os.WriteFile(filepath.Join(dir, "plugkit-empty.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheFile := filepath.Join(testutil.TempDir(t), "describe.cache")
	entries := fillCompileCache(t, cacheFile+".wasm")
	list := func(args ...string) (int, string) {
		var stdout, stderr strings.Builder
		code := run(append([]string{"plugins", "list", "--dir", dir, "--cookie", fsCookie}, args...), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}

	if code, out := list("--cache", cacheFile, "--wasm-cache-bytes", strconv.Itoa(5*mib/2)); code != 1 {
		t.Fatalf("plugins list of an empty module: exit %d, want 1 (none usable)\n%s", code, out)
	}
	checkKept(t, "--wasm-cache-bytes 2.5 MiB", entries, 2)

	code, out := list("--wasm-cache-bytes", "1000")
	if code != 2 || !strings.Contains(out, "give --cache FILE, or drop --wasm-cache-bytes") {
		t.Errorf("--wasm-cache-bytes without --cache: exit %d, %s; want 2 and what to do", code, out)
	}
}

// fillCompileCache puts four compiled modules of 1 MiB each into the
// compilation cache dir, in wazero's layout, and returns their files, the
// one used longest ago first.
func fillCompileCache(t *testing.T, dir string) []string {
	t.Helper()
	sub := filepath.Join(dir, "wazero-test-"+runtime.GOARCH+"-"+runtime.GOOS)
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	var entries []string
	used := time.Now().Add(-10 * time.Hour)
	for i := range 4 {
		entry := filepath.Join(sub, fmt.Sprintf("%064x", i+1))
		if err := os.WriteFile(entry, make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(entry, used, used); err != nil {
			t.Fatal(err)
		}
		used = used.Add(time.Hour)
		entries = append(entries, entry)
	}
	return entries
}

// checkKept fails t unless the last keep of entries (fillCompileCache's,
// the one used longest ago first) are left and the others removed.
func checkKept(t *testing.T, what string, entries []string, keep int) {
	t.Helper()
	for i, e := range entries {
		_, err := os.Stat(e)
		if kept, want := err == nil, i >= len(entries)-keep; kept != want {
			t.Errorf("%s: module %d of %d (oldest first) kept: %v; want only the %d used last kept", what, i+1, len(entries), kept, keep)
		}
	}
}
