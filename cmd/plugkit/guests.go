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
// module in for its Describe check: compiled into cacheDir (--wasm-cache)
// when given, so that the host's first start finds it compiled, else
// interpreted, which is ready several times sooner for one Describe. The
// caller closes it.
func checkRuntime(cacheDir string) *wasmhost.Runtime {
	return guestRuntime(cacheDir, nil)
}

// guestRuntime is the runtime of the WebAssembly plugins the CLI starts
// for a few calls (a check, inspect, call): compiled into cacheDir when
// given, else interpreted, and granted dirs. The caller closes it.
func guestRuntime(cacheDir string, dirs []wasmhost.Dir) *wasmhost.Runtime {
	return wasmhost.New(wasmhost.Config{CacheDir: cacheDir, Interpret: cacheDir == "", Dirs: dirs, CompileTimeout: cliCompileTimeout})
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
	cache  string
	grants []wasmhost.Dir
}

func (g *guestFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.cache, "wasm-cache", "", "for a WebAssembly plugin (.wasm): a compilation cache `directory` (as install's --wasm-cache); without it the module is interpreted, ready sooner and slower to call")
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
func (g *guestFlags) used() bool { return g.cache != "" || len(g.grants) > 0 }
