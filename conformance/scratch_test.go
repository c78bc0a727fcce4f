package conformance_test

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/conformance"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestTempDir: outside a Matrix the directory is made in os.TempDir();
// in a Matrix with Scratch, in Scratch, named as it is for a binary and
// under GuestScratch for a module; a module of a Matrix without Scratch
// gets an error naming what to set. Each cleanup removes its directory.
func TestTempDir(t *testing.T) {
	scratch := testutil.TempDir(t)
	check := func(name string, ctx context.Context, wantHostIn, wantPluginIn string) {
		t.Helper()
		dir, cleanup, err := conformance.TempDir(ctx, "suite-")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		base := path.Base(filepath.ToSlash(dir))
		host := filepath.Join(wantHostIn, base)
		if fi, err := os.Stat(host); err != nil || !fi.IsDir() || !strings.HasPrefix(base, "suite-") {
			t.Errorf("%s: %q; want a directory suite-* made in %s: %v", name, dir, wantHostIn, err)
		}
		if want := wantPluginIn + "/" + base; filepath.ToSlash(dir) != filepath.ToSlash(want) {
			t.Errorf("%s: the plugin is handed %q, want %q", name, dir, want)
		}
		cleanup()
		if _, err := os.Stat(host); !os.IsNotExist(err) {
			t.Errorf("%s: %s still there after cleanup: %v", name, host, err)
		}
	}
	ctx := context.Background()
	check("outside a matrix", ctx, os.TempDir(), filepath.ToSlash(os.TempDir()))
	mx := conformance.Matrix{Scratch: scratch}
	check("a binary", conformance.WithScratch(ctx, mx, "/plugins/fs", false), scratch, filepath.ToSlash(scratch))
	check("a module", conformance.WithScratch(ctx, mx, "/plugins/fs.wasm", true), scratch, conformance.GuestScratch)

	_, _, err := conformance.TempDir(conformance.WithScratch(ctx, conformance.Matrix{}, "/plugins/fs.wasm", true), "suite-")
	if err == nil || !strings.Contains(err.Error(), "fs.wasm is a WebAssembly module") || !strings.Contains(err.Error(), "Matrix.Scratch is empty") {
		t.Errorf("a module without Scratch: %v; want an error naming Matrix.Scratch", err)
	}
}
