//go:build unix

package manager_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// TestOwnSourceGetsCacheAndPins: a Source of one's own (listFile, the
// plugins a file lists) that hands its paths to a Finder gets the
// describe cache (a warm run with a new Finder on the same cache file
// launches nothing, and its entries say Cached), the pins (a pinned
// binary that does not match is refused without running), and starts
// through the Finder for use.
func TestOwnSourceGetsCacheAndPins(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	a := writePlugin(t, dir, "a", "x 1")
	writePlugin(t, dir, "b", "y 1,2")
	list := filepath.Join(dir, "plugins.txt")
	if err := os.WriteFile(list, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(testutil.TempDir(t), "cache.json")
	run := func(pins map[string]string) (*manager.Manager, *manager.Finder) {
		f := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache, Pins: pins}
		return newManager(t, manager.Config{Sources: []manager.Source{listFile{list, f}}}), f
	}

	cold, coldF := run(nil)
	if n := coldF.Launches(); n != 2 {
		t.Errorf("cold run: %d launches, want 2 (one Describe each)", n)
	}
	if _, err := cold.Lookup("objectstore", "y"); err != nil {
		t.Fatal(err)
	}

	warm, warmFinder := run(nil)
	for _, e := range warm.Entries() {
		if e.Err != nil || !e.Cached {
			t.Errorf("warm run: %s: cached %v, error %v; want it from the cache", e.Path, e.Cached, e.Err)
		}
	}
	if n := warmFinder.Launches(); n != 0 {
		t.Errorf("warm run: %d launches, want 0", n)
	}
	conn, info := store(t, warm, "y")
	if info.Path != filepath.Join(dir, "b") || info.Major != 2 {
		t.Errorf("dispensed %+v, want major 2 of b", info)
	}
	initStore(t, conn, nil)
	if n := warmFinder.Launches(); n != 1 {
		t.Errorf("after a call: %d launches, want 1 (the plugin started for use through the Finder)", n)
	}

	data, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	good := hex.EncodeToString(sum[:])
	pinned, pinnedF := run(map[string]string{"a": good, "b": good}) // b's pin is a's sum
	var refused *host.ChecksumError
	for _, e := range pinned.Entries() {
		switch filepath.Base(e.Path) {
		case "a":
			if e.Err != nil {
				t.Errorf("a matches its pin, yet: %v", e.Err)
			}
		case "b":
			if !errors.As(e.Err, &refused) {
				t.Errorf("b does not match its pin, yet: %v; want a *host.ChecksumError", e.Err)
			}
		}
	}
	if n := pinnedF.Launches(); n != 0 {
		t.Errorf("pinned run: %d launches, want 0 (a from the cache after hashing, b refused unrun)", n)
	}
}
