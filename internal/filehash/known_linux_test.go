package filehash

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func readCount() int64 { return reads.Load() }

func sumOf(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := SHA256File(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hexSum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestSHA256FileRemembersOnlyUnchangedFiles: a file left alone is hashed
// once; one rewritten to the same size with its modification time set
// back (which its owner can do) is hashed anew, because the rewrite moved
// its change time; a file changed less than racyWindow ago is never
// remembered.
func TestSHA256FileRemembersOnlyUnchangedFiles(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old")
	if err := os.WriteFile(old, []byte("release one"), 0o700); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(old)
	fresh := filepath.Join(dir, "fresh")
	time.Sleep(racyWindow + 100*time.Millisecond)
	if err := os.WriteFile(fresh, []byte("written now"), 0o700); err != nil {
		t.Fatal(err)
	}

	n := readCount()
	if got := sumOf(t, old); got != hexSum([]byte("release one")) {
		t.Fatalf("sum %s, want the file's", got)
	}
	sumOf(t, old)
	if r := readCount() - n; r != 1 {
		t.Errorf("a file unchanged for over %v, hashed twice, was read %d times, want once", racyWindow, r)
	}

	n = readCount()
	sumOf(t, fresh)
	sumOf(t, fresh)
	if r := readCount() - n; r != 2 {
		t.Errorf("a file changed just now, hashed twice, was read %d times, want twice (its digest must not be remembered)", r)
	}

	// The owner rewrites it to the same size and sets its modification
	// time back: only the change time tells.
	if err := os.WriteFile(old, []byte("release two"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(old, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got := sumOf(t, old); got != hexSum([]byte("release two")) {
		t.Errorf("after a same-size rewrite with the modification time set back, SHA256File = %s (the old content's: %v), want the new content's", got, got == hexSum([]byte("release one")))
	}

	// Renamed over by another file: another inode.
	other := filepath.Join(dir, "other")
	os.WriteFile(other, []byte("release one"), 0o700)
	os.Chtimes(other, fi.ModTime(), fi.ModTime())
	if err := os.Rename(other, old); err != nil {
		t.Fatal(err)
	}
	if got := sumOf(t, old); got != hexSum([]byte("release one")) {
		t.Errorf("after a rename over it, SHA256File = %s, want the new file's", got)
	}
}
