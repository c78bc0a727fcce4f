package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

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
		if err := rt.Compile(ctx, b); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// compileTimeout bounds each compile: the tests' own modules, trusted,
// whose cold compile takes some 15 s of CPU each, and on a loaded machine
// (make test runs packages side by side on 2 CPUs) minutes of wall time:
// past wasmhost's default minute, the tests would interpret every guest.
const compileTimeout = 10 * time.Minute
