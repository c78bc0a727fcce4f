package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestInstallOfAModuleWithoutGuests: where the module is what installs
// and Target.Guests is nil, Install refuses before it downloads anything,
// saying what to set (release links no WebAssembly runtime of its own);
// Push of a module-only release without Publication.Guests likewise.
func TestInstallOfAModuleWithoutGuests(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/moduleonly", nil)
	pushPlatforms(t, repo, "1.0.0", PlatformWasm)
	rel, err := Fetch(testCtx(t), repo, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	_, pub := newKey(t)
	dir := testutil.TempDir(t)
	_, err = Install(testCtx(t), repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie, Wasm: WasmOnly})
	if err == nil || !strings.Contains(err.Error(), "Target.Guests is nil") {
		t.Fatalf("Install of a module without Target.Guests: %v; want it refused naming Target.Guests", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".plugkit-install.lock" {
			t.Errorf("Install left %s in the directory", e.Name())
		}
	}

	key, _ := newKey(t)
	release := testutil.TempDir(t)
	writeFile(t, filepath.Join(release, "wasip1_wasm", "objectstore-fake.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	_, err = Push(testCtx(t), repo, Publication{Dir: release, Version: "2.0.0", Key: key, Cookie: objectstore.Cookie})
	if err == nil || !strings.Contains(err.Error(), "Publication.Guests is nil") {
		t.Fatalf("Push of a module-only release without Publication.Guests: %v; want it refused naming Publication.Guests", err)
	}
}
