package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero"
)

func main() {
	cache := flag.String("cache", "", "the compilation cache's directory")
	flag.Parse()
	if *cache == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: wasmcompile -cache DIR MODULE.wasm...")
		os.Exit(2)
	}
	if err := compile(*cache, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "wasmcompile:", err)
		os.Exit(1)
	}
}

// compile compiles each module into the cache in dir.
func compile(dir string, modules []string) error {
	ctx := context.Background()
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return err
	}
	// The cache key covers WithCloseOnContextDone, which wasmhost sets.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true))
	defer rt.Close(ctx)
	for _, path := range modules {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if _, err := rt.CompileModule(ctx, b); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}
