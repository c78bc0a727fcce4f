package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/plugkit/plugkit/wasmhost"
)

// checkRuntime is the runtime install and release push run a WebAssembly
// module in for its Describe check: compiled into the cache (--wasm-cache)
// when given, so that the host's first start finds it compiled, else
// interpreted, which is ready several times sooner for one Describe. The
// caller closes it.
func checkRuntime(cache wasmCacheFlags) *wasmhost.Runtime {
	return guestRuntime(cache, nil)
}

// guestRuntime is the runtime of the WebAssembly plugins the CLI starts
// for a few calls (a check, inspect, call): compiled into the cache when
// given, else interpreted, and granted dirs. The caller closes it.
func guestRuntime(cache wasmCacheFlags, dirs []wasmhost.Dir) *wasmhost.Runtime {
	return wasmhost.New(wasmhost.Config{CacheDir: cache.dir, CacheBytes: cache.bytes, Interpret: cache.dir == "", Dirs: dirs, CompileTimeout: cliCompileTimeout})
}

// wasmCacheFlags are --wasm-cache, the compilation cache of the
// WebAssembly modules the CLI starts, and --wasm-cache-bytes, its bound.
// The bound is the CLI's share of a directory other runtimes may use too
// (a host's manager.Finder.Guests, another tool): each one that opens the
// cache trims it to its own bound, so a CLI at the default would remove
// the modules of a host that allows itself more.
type wasmCacheFlags struct {
	dir   string
	bytes int64
}

// register adds the two flags to fs; dirUsage is --wasm-cache's usage.
func (c *wasmCacheFlags) register(fs *flag.FlagSet, dirUsage string) {
	fs.StringVar(&c.dir, "wasm-cache", "", dirUsage)
	fs.Int64Var(&c.bytes, "wasm-cache-bytes", 0, "the most `bytes` of compiled modules --wasm-cache keeps, "+cacheBoundUsage)
}

// cacheBoundUsage ends the usage of each --wasm-cache-bytes flag (the
// guests' and plugins').
const cacheBoundUsage = "the ones used longest ago removed first (wasmhost.Config.CacheBytes): give the bound of the host that shares the directory; 0: 2 GiB (wasmhost.DefaultCacheBytes), -1: no bound"

// check reports --wasm-cache-bytes given without --wasm-cache, which it
// would not bound.
func (c wasmCacheFlags) check() error {
	if c.bytes != 0 && c.dir == "" {
		return fmt.Errorf("--wasm-cache-bytes %d bounds the compilation cache, and no --wasm-cache names one: give --wasm-cache DIR, or drop --wasm-cache-bytes", c.bytes)
	}
	return nil
}

// cliCompileTimeout bounds the compile of a module the CLI starts: a 30 MB
// module's first compile took 5-6 s on a quiet 2-CPU machine and over
// 40 s on a busy one; a person waits for it, told what it is (compileFirst),
// and may interrupt it.
const cliCompileTimeout = 5 * time.Minute

// compileFirst compiles the module at path in rt before its start, so that
// the start's --timeout bounds the start alone (a compile into an empty
// --wasm-cache can take longer than the whole start). A compile that takes
// over two seconds says so on stderr once, prefixed with cmd. On failure
// it returns the error to report.
func compileFirst(cmd string, rt *wasmhost.Runtime, path, cacheDir string, stderr io.Writer) error {
	said := make(chan struct{})
	slow := time.AfterFunc(2*time.Second, func() {
		defer close(said)
		if cacheDir == "" {
			fmt.Fprintf(stderr, "%s: preparing %s for the interpreter ...\n", cmd, path)
			return
		}
		fmt.Fprintf(stderr, "%s: preparing %s (compiled once into %s; later starts load it from there) ...\n", cmd, path, cacheDir)
	})
	err := rt.CompileFile(context.Background(), path)
	if !slow.Stop() {
		<-said // the message is written: nothing writes to stderr after return
	}
	if err != nil && cacheDir != "" {
		return fmt.Errorf("%s: %w (leave out --wasm-cache to interpret the module: ready sooner, slower to call)", path, err)
	}
	return err
}

// guestFlags are the flags of inspect and call for a plugin that is a
// WebAssembly module: where its compiled form is kept, and the host
// directories it is granted (none by default: every file access fails).
type guestFlags struct {
	cache  wasmCacheFlags
	grants []wasmhost.Dir
}

func (g *guestFlags) register(fs *flag.FlagSet) {
	g.cache.register(fs, "for a WebAssembly plugin (.wasm): a compilation cache `directory` (as install's --wasm-cache); without it the module is interpreted, ready sooner and slower to call")
	fs.Func("grant", "for a WebAssembly plugin: grant it the host `DIR`, read-only (repeatable); DIR=/PATH shows it to the plugin at /PATH instead of DIR (needed on Windows)", g.grant(false))
	fs.Func("grant-rw", "for a WebAssembly plugin: grant it the host `DIR`, writable (repeatable); DIR=/PATH as for --grant", g.grant(true))
}

// grant returns the parser of --grant (or --grant-rw when writable).
func (g *guestFlags) grant(writable bool) func(string) error {
	return func(s string) error {
		d, err := parseGrant(s)
		if err != nil {
			return err
		}
		d.Writable = writable
		g.grants = append(g.grants, d)
		return nil
	}
}

// parseGrant reads DIR or DIR=/GUESTPATH: the last "=" followed by "/"
// separates the two (a guest's paths are "/"-separated and absolute).
func parseGrant(s string) (wasmhost.Dir, error) {
	d := wasmhost.Dir{HostPath: s}
	if i := strings.LastIndex(s, "=/"); i >= 0 {
		d.HostPath, d.GuestPath = s[:i], s[i+1:]
	}
	if d.HostPath == "" {
		return d, fmt.Errorf("%q names no host directory: want DIR or DIR=/PATH", s)
	}
	return d, nil
}

// used reports whether any of the flags was given: they apply to a
// WebAssembly plugin only.
func (g *guestFlags) used() bool {
	return g.cache.dir != "" || g.cache.bytes != 0 || len(g.grants) > 0
}
