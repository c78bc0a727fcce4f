package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/plugkit/plugkit/wasmhost"
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

// compile compiles each module into the cache in dir, as a
// wasmhost.Runtime compiles it (its checks, then wazero's compile of the
// module with its stop checks added), so that the Runtimes of the tests
// find it there.
func compile(dir string, modules []string) error {
	ctx := context.Background()
	rt := wasmhost.New(wasmhost.Config{CacheDir: dir})
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
