package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tetratelabs/wazero"
)

func main() {
	cache := flag.String("cache", "", "the compilation cache's directory")
	flag.Parse()
	if *cache == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: wasmcompile -cache DIR MODULE.wasm...")
		os.Exit(2)
	}
	prune(*cache, time.Now().Add(-pruneAge))
	if err := compile(*cache, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "wasmcompile:", err)
		os.Exit(1)
	}
}

// pruneAge is how long an entry of the cache lives: each is about three
// times its module's size (some 90 MB for a Go plugin), and every change to
// a test guest makes a new one.
const pruneAge = 72 * time.Hour

// prune removes the cache's entries written before old (a module still in
// use is compiled again, once).
func prune(dir string, old time.Time) {
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().Before(old) {
			os.Remove(path)
		}
		return nil
	})
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
