//go:build !windows

package osdep

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFileID: a file and a hard link to it have one device and inode;
// another file has another.
func TestFileID(t *testing.T) {
	dir := t.TempDir()
	a, b, link := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "link")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(a, link); err != nil {
		t.Fatal(err)
	}
	id := func(p string) [2]uint64 {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		dev, ino, ok := FileID(fi)
		if !ok {
			t.Fatalf("%s: no device and inode", p)
		}
		return [2]uint64{dev, ino}
	}
	if id(a) != id(link) || id(a) == id(b) {
		t.Errorf("a %v, its hard link %v, b %v: want a and its link the same, b another", id(a), id(link), id(b))
	}
}
