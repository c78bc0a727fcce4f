package conformance_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/conformance"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestModuleWithoutGuestsFails: a WebAssembly module in the directory of
// a Matrix without Guests fails its cells at "start", saying what to
// set, and runs nothing (the package links no WebAssembly runtime).
func TestModuleWithoutGuestsFails(t *testing.T) {
	dir := testutil.TempDir(t)
	if err := os.WriteFile(filepath.Join(dir, "memory.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mx := conformance.Matrix{Kind: objectstore.Kind, Cookie: objectstore.Cookie, Hosts: objectstore.MatrixHosts(false)}
	cells, err := mx.Run(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != len(mx.Hosts) {
		t.Fatalf("%d cells, want one per host major (%d)", len(cells), len(mx.Hosts))
	}
	for _, c := range cells {
		if c.Mode != conformance.ModeFailing || len(c.Failures) != 1 || c.Failures[0].Case != "start" || !strings.Contains(c.Failures[0].Error, "Matrix.Guests is nil") {
			t.Errorf("cell %+v: want it failing at start, naming Matrix.Guests", c)
		}
	}
}
