//go:build unix

package host

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestSocketDirsShareOneLock: the socket directories a host makes under
// one parent share one lock file (hard links to it), held by one
// descriptor; a sweep leaves them while the lock is held, and removes
// every one of them once it is not (the host died); a directory made after
// others were removed links to one still there.
func TestSocketDirsShareOneLock(t *testing.T) {
	parent := testutil.TempDir(t)
	var dirs []*sockDir
	for range 3 {
		d, err := newSockDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			d.remove()
		}
	})
	first, err := os.Stat(filepath.Join(dirs[0].path, ownerFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs[1:] {
		fi, err := os.Stat(filepath.Join(d.path, ownerFile))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(first, fi) || d.lock != nil || d.owner == nil {
			t.Errorf("%s: its lock is not the first directory's", d.path)
		}
	}
	if n := sweepDeadHostDirs(parent); n != 0 {
		t.Fatalf("the sweep removed %d directories of this live host", n)
	}
	// The first directory goes; a new one links to a directory left.
	dirs[0].remove()
	d, err := newSockDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs[1:], d)
	fi, err := os.Stat(filepath.Join(d.path, ownerFile))
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.Stat(filepath.Join(dirs[0].path, ownerFile)); left == nil || !os.SameFile(left, fi) {
		t.Errorf("a directory made after the first was removed does not share the lock of those left")
	}
	// As if the host died: its one descriptor closes, and a sweep
	// removes every directory.
	owner := dirs[0].owner
	owner.mu.Lock()
	owner.f.Close()
	owner.mu.Unlock()
	if n := sweepDeadHostDirs(parent); n != len(dirs) {
		t.Errorf("the sweep removed %d of the dead host's %d directories", n, len(dirs))
	}
	for _, d := range dirs {
		if _, err := os.Stat(d.path); !os.IsNotExist(err) {
			t.Errorf("%s: left by the sweep: %v", d.path, err)
		}
	}
	owner.mu.Lock()
	owner.f, owner.links = nil, nil // closed above; the dirs are gone
	owner.mu.Unlock()
	dirs = nil
}
