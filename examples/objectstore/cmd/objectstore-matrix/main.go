// Command objectstore-matrix is the compatibility matrix of the example
// objectstore kind: it runs every plugin binary in a directory against
// every host major this repository's object-store host ships (v2, with its
// v1->v2 adapter, and v1), runs the kind's conformance suite in each cell,
// and prints which cells work directly, through the adapter, are
// incompatible (with the release to pick) or fail (with the failing cases).
// It builds nothing: it tests what is in the directory.
//
//	objectstore-matrix --dir DIR [--json | --markdown] [--releases FILE] [--v3] [--wasm-cache DIR [--wasm-cache-bytes N]] [--parallel N]
//
// The exit status is 0 when no cell fails, 1 when one does, 2 for bad
// usage. Incompatible cells are information, not failures.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/plugkit/plugkit/conformance"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/wasmhost"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is conformance's matrix command over the object-store hosts, with
// --v3, --wasm-cache and --wasm-cache-bytes of its own; the release index defaults to the
// examples' releases.json. WebAssembly modules in the directory run in a
// wasmhost.Runtime that grants them one directory, the matrix's scratch
// (conformance.GuestScratch), where the suites make the fs store's
// directories; it is removed when the run ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	scratch, err := os.MkdirTemp("", "objectstore-matrix-")
	if err != nil {
		fmt.Fprintf(stderr, "objectstore-matrix: a scratch directory for the plugins: %v (set TMPDIR to a writable directory)\n", err)
		return 1
	}
	defer os.RemoveAll(scratch)
	var guests *wasmhost.Runtime
	defer func() {
		if guests != nil {
			guests.Close(context.Background())
		}
	}()
	mx := conformance.Matrix{Kind: objectstore.Kind, Cookie: objectstore.Cookie, Releases: objectstore.Releases(), Scratch: scratch}
	return conformance.CommandFlags(ctx, mx, "objectstore-matrix", args, stdout, stderr, func(fs *flag.FlagSet) func(*conformance.Matrix) error {
		withV3 := fs.Bool("v3", false, "also test against the v3 preview host")
		cache := fs.String("wasm-cache", "", "a compilation cache `directory` for the WebAssembly modules (.wasm), kept across runs; without it they are compiled in memory at every run")
		cacheBytes := fs.Int64("wasm-cache-bytes", 0, "with --wasm-cache: the most `bytes` of compiled modules it keeps, the ones used longest ago removed first (wasmhost.Config.CacheBytes; give the bound of whatever else shares the directory); 0: 2 GiB (wasmhost.DefaultCacheBytes), -1: no bound")
		return func(mx *conformance.Matrix) error {
			if *cacheBytes != 0 && *cache == "" {
				return fmt.Errorf("--wasm-cache-bytes %d bounds the compilation cache, and no --wasm-cache names one: give --wasm-cache DIR, or drop --wasm-cache-bytes", *cacheBytes)
			}
			mx.Hosts = objectstore.MatrixHosts(*withV3)
			guests = wasmhost.New(wasmhost.Config{CacheDir: *cache, CacheBytes: *cacheBytes,
				Dirs: []wasmhost.Dir{{HostPath: scratch, GuestPath: conformance.GuestScratch, Writable: true}}})
			mx.Guests = guests
			return nil
		}
	})
}
