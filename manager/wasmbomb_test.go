package manager_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/wasmhost"
)

// localsBomb is a 31-byte module whose one function declares 100,000
// locals (0xc0 0x8d 0x06), twice wasmhost's default limit (the bomb of
// issue 36 declared 4 billion, which wazero allocates before any check).
var localsBomb = []byte("\x00asm\x01\x00\x00\x00" +
	"\x01\x04\x01\x60\x00\x00" + // types: () -> ()
	"\x03\x02\x01\x00" + // functions: one, of type 0
	"\x0a\x08\x01\x06\x01\xc0\x8d\x06\x7f\x0b") // code: 100,000 i32 locals, end

// TestDiscoverRefusesModuleBomb: discovery, which compiles every .wasm in
// a plugin directory, lists a module past wasmhost's limits with the
// *wasmhost.LimitError that names the limit, and goes on; the manager
// stays usable (a second Discover answers the same).
func TestDiscoverRefusesModuleBomb(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	if err := os.WriteFile(filepath.Join(dir, "bomb.wasm"), localsBomb, 0o644); err != nil {
		t.Fatal(err)
	}
	guests := wasmhost.New(wasmhost.Config{})
	defer guests.Close(context.Background())
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, Guests: guests}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	defer m.Close()
	for range 2 {
		if err := m.Discover(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		bins := m.Entries()
		if len(bins) != 1 {
			t.Fatalf("%d binaries listed; want bomb.wasm", len(bins))
		}
		var le *wasmhost.LimitError
		if !errors.As(bins[0].Err, &le) || le.Field != "Limits.Locals" {
			t.Errorf("bomb.wasm: %v; want refused by wasmhost.Config.Limits.Locals", bins[0].Err)
		}
	}
}

// TestModuleWithoutGuests: a Finder without Guests lists a WebAssembly
// module as unusable, saying what to set, and runs nothing.
func TestModuleWithoutGuests(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	if err := os.WriteFile(filepath.Join(dir, "plugin.wasm"), localsBomb, 0o644); err != nil {
		t.Fatal(err)
	}
	f := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{f.Dirs(dir)}})
	bins := m.Entries()
	if len(bins) != 1 || bins[0].Err == nil || !strings.Contains(bins[0].Err.Error(), "Finder.Guests") || f.Launches() != 0 {
		t.Errorf("a module without Guests: %+v, %d launches; want it unusable, naming Finder.Guests, and no launch", bins, f.Launches())
	}
}
