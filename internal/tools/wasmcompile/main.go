package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/wasmhost"
)

func main() {
	cache := flag.String("cache", "", "the compilation cache's directory")
	cacheBytes := flag.Int64("cache-bytes", 0, "the most the cache keeps (wasmhost.Config.CacheBytes; 0: its default)")
	flag.Parse()
	if *cache == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: wasmcompile -cache DIR MODULE.wasm...")
		os.Exit(2)
	}
	if err := compile(*cache, *cacheBytes, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "wasmcompile:", err)
		os.Exit(1)
	}
}

// compile compiles each module into the cache in dir, as a
// wasmhost.Runtime compiles it (its checks, then wazero's compile of the
// module with its stop checks added), so that the Runtimes of the tests
// find it there. The cache keeps at most cacheBytes (-cache-bytes, which
// testutil.CompiledWasm sets to testutil.WasmCacheBytes): each compiled module
// is about three times its module's size (some 90 MB for a Go plugin), and
// every change to a test guest makes a new one.
func compile(dir string, cacheBytes int64, modules []string) error {
	ctx := context.Background()
	rt := wasmhost.New(wasmhost.Config{CacheDir: dir, CacheBytes: cacheBytes, CompileTimeout: compileTimeout})
	defer rt.Close(ctx)
	for _, path := range modules {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		unlock := lockModule(dir, b)
		err = rt.Compile(ctx, b)
		unlock()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// lockModule waits until no other wasmcompile compiles module into the
// cache in dir, and returns the function that lets the next one go. make
// test runs the tests of several packages at once, and each compiles the
// modules it starts (the memory example's, four packages): in a cold run
// they compiled the same module side by side, each for seconds of CPU,
// where the second can find it compiled (wazero writes a compiled module
// under a temporary name and renames it into place). The lock is a file
// per module (its SHA-256) under dir/wasmcompile-locks, locked while the
// module compiles: other modules compile meanwhile, and a process that
// dies drops its lock. It waits at most compileTimeout, and compiles
// without the lock when it cannot take one: a lock saves CPU, it is not
// needed for a correct cache.
func lockModule(dir string, module []byte) (unlock func()) {
	sum := sha256.Sum256(module)
	locks := filepath.Join(dir, "wasmcompile-locks")
	if err := os.MkdirAll(locks, 0o700); err != nil {
		return func() {}
	}
	pruneLocks(locks, time.Now())
	f, err := os.OpenFile(filepath.Join(locks, hex.EncodeToString(sum[:])), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return func() {}
	}
	ctx, cancel := context.WithTimeout(context.Background(), compileTimeout)
	defer cancel()
	if osdep.Lock(ctx, f) != nil {
		f.Close()
		return func() {}
	}
	now := time.Now()
	os.Chtimes(f.Name(), now, now) // in use: pruneLocks leaves it
	return func() { f.Close() }
}

// pruneLocks removes the lock files of modules not compiled for a week
// (each is empty, one per module ever compiled here).
func pruneLocks(locks string, now time.Time) {
	entries, err := os.ReadDir(locks)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && now.Sub(info.ModTime()) > 7*24*time.Hour {
			os.Remove(filepath.Join(locks, e.Name()))
		}
	}
}

// compileTimeout bounds each compile: the tests' own modules, trusted,
// whose cold compile takes some 15 s of CPU each, and on a loaded machine
// (make test runs packages side by side on 2 CPUs) minutes of wall time:
// past wasmhost's default minute, the tests would interpret every guest.
const compileTimeout = 10 * time.Minute
