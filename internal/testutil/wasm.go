package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
)

// GoBuildWasm builds the main package pkg for GOOS=wasip1 GOARCH=wasm into
// the file out (a WebAssembly module) and returns out. Under make
// test-windows, where the Go tool does not run, it copies the module
// built beforehand (PrebuiltEnv: the import path with "/" replaced by
// "_", plus ".wasm"). flags go to go build before the package (such as
// "-ldflags=-X main.version=2.0.0"); a build with flags has no prebuilt
// module.
func GoBuildWasm(ctx context.Context, t testing.TB, out, pkg string, flags ...string) string {
	t.Helper()
	if err := BuildWasm(ctx, out, pkg, flags...); err != nil {
		t.Fatal(err)
	}
	return out
}

// BuildWasm is GoBuildWasm for callers without a testing.TB.
func BuildWasm(ctx context.Context, out, pkg string, flags ...string) error {
	return buildWasm(ctx, out, pkg, ".wasm", flags...)
}

// BuildWasmReactor is BuildWasm with -buildmode=c-shared: a WASI reactor,
// which wasmhost starts from a snapshot taken after its init (the
// prebuilt file's name ends in ".reactor.wasm").
func BuildWasmReactor(ctx context.Context, out, pkg string) error {
	return buildWasm(ctx, out, pkg, ".reactor.wasm", "-buildmode=c-shared")
}

func buildWasm(ctx context.Context, out, pkg, ext string, flags ...string) error {
	if dir := os.Getenv(PrebuiltEnv); dir != "" {
		if len(flags) > 0 && ext == ".wasm" {
			return fmt.Errorf("%s built with %q: make test-windows builds no such module beforehand; skip this test under Wine", pkg, flags)
		}
		return copyPrebuiltWasm(dir, out, pkg, ext)
	}
	// grpcnotrace leaves out grpc's golang.org/x/net/trace (html/template,
	// text/template), which a guest never uses: a quarter of the module,
	// as docs/wasm.md recommends to plugin authors.
	// -s=false keeps the name section (the guest's function names in
	// traps and stack traces) that go run's -s would strip, as go build
	// keeps it; a caller's -ldflags add to it.
	// -trimpath leaves the checkout's directory out of the module, so
	// that every checkout of the same source builds the same bytes: the
	// compilation cache (CompiledWasm) is keyed by them, and one
	// checkout's guests compiled there are every other's. Without it,
	// each worktree on a machine compiled its own (some 90 MB each) and
	// the cache's bound removed the others' to make room, so that a
	// warm run compiled its guests again.
	ldflags := "-s=false"
	args := []string{"-trimpath", "-tags", "grpcnotrace"}
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "-ldflags="); ok {
			ldflags += " " + v
			continue
		}
		args = append(args, f)
	}
	env := append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if err := goLink(ctx, env, append(args, "-ldflags="+ldflags), out, pkg); err != nil {
		return fmt.Errorf("GOOS=wasip1 GOARCH=wasm: %w", err)
	}
	return nil
}

// copyPrebuiltWasm copies pkg's module from dir to out.
func copyPrebuiltWasm(dir, out, pkg, ext string) error {
	name, err := prebuiltName(pkg, ext)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("%w (make test-windows builds the WebAssembly test plugins beforehand)", err)
	}
	return os.WriteFile(out, b, 0o644)
}

// WasmCacheBytes is the bound of the tests' compilation cache
// (CompiledWasm's directory): room for every guest one run of the tests
// compiles (about fifteen) and the last few changes of each. A test's
// wasmhost.Config over that cache sets it as CacheBytes: with the default
// (2 GiB), each Runtime trimmed the cache every checkout on the machine
// shares, and removed compiled guests that a run then compiled again.
const WasmCacheBytes = 4 << 30

// CompiledWasm compiles the modules (files) into a wazero compilation
// cache kept across test runs under os.UserCacheDir(), and returns its
// directory: a wasmhost.Config with it as CacheDir then starts them
// compiled without compiling them. The compile runs in a process of its
// own built without the race detector (internal/tools/wasmcompile),
// where it takes seconds, not minutes; a warm cache makes it a few reads.
// It returns "" when it cannot (no Go tool, as under make test-windows):
// interpret the modules then.
//
// wazero keys the cache by its version, WazeroVersion: a test binary that
// starts the modules imports internal/testutil/wazeroversion, so that it
// reads them under the version the tool compiled them for.
func CompiledWasm(ctx context.Context, modules ...string) string {
	if os.Getenv(PrebuiltEnv) != "" {
		return ""
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	dir := filepath.Join(base, "plugkit-test", "wasm")
	root, err := moduleRoot()
	if err != nil {
		return ""
	}
	args := append([]string{"run", "-trimpath", "./internal/tools/wasmcompile", "-cache", dir, "-cache-bytes", strconv.Itoa(WasmCacheBytes)}, modules...)
	cmd := exec.CommandContext(ctx, GoTool(), args...)
	cmd.Dir = root
	start := time.Now()
	b, err := cmd.CombinedOutput()
	logBuild("wasmcompile", strings.Join(modules, " "), start, cmd)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testutil.CompiledWasm: %v\n%s", err, b)
		return ""
	}
	return dir
}

// WazeroVersion is the version of wazero that go.mod requires, which
// wazero keys its compilation cache by (a directory of each version) in
// a program built with go build or go run: wasmcompile (CompiledWasm),
// the plugkit command, a test binary of a package main. A library's test
// binary has no dependencies in its build information, and its wazero
// said "dev" instead: the tests of wasmhost, manager and release read
// another directory than those of cmd/plugkit and objectstore-matrix, and
// the memory example's module, which both sides start, was compiled once
// for each. Package wazeroversion sets it in the test binary.
func WazeroVersion() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, "go.mod")
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(path, b, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == wazeroModule {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", path, wazeroModule)
}

// wazeroModule is wazero's module path.
const wazeroModule = "github.com/tetratelabs/wazero"
