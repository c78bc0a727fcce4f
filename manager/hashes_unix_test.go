//go:build !windows

package manager

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
)

// countHashes returns a hook for newHashes (or Manager.hooks.hashed) and
// a function that returns the files it was told are read, by path.
func countHashes() (hook func(path string), read func() map[string]int) {
	var mu sync.Mutex
	counts := map[string]int{}
	hook = func(path string) {
		mu.Lock()
		defer mu.Unlock()
		counts[path]++
	}
	return hook, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		total := map[string]int{}
		for p, n := range counts {
			total[p] = n
		}
		return total
	}
}

func sumOf(data string) string {
	s := sha256.Sum256([]byte(data))
	return hex.EncodeToString(s[:])
}

// TestHashesShareOneFile: paths reaching one file (symbolic links, a
// hard link, the same path twice) are hashed once, in parallel callers,
// and share its sum; another file is hashed on its own.
func TestHashesShareOneFile(t *testing.T) {
	t.Parallel()
	hook, read := countHashes()
	dir := testutil.TempDir(t)
	real, other := filepath.Join(dir, "real"), filepath.Join(dir, "other")
	writeTestFile(t, real, "one binary")
	writeTestFile(t, other, "another binary")
	paths := []string{real, real, filepath.Join(dir, "hard")}
	if err := os.Link(real, paths[2]); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"l1", "l2", "l3"} {
		p := filepath.Join(dir, name)
		if err := os.Symlink(real, p); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	paths = append(paths, other)
	h := newHashes(4, hook)
	sums := make([]string, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() {
			fi, err := os.Stat(p)
			if err != nil {
				t.Error(err)
				return
			}
			if sums[i], err = h.sum(context.Background(), p, fi); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, p := range paths {
		want := sumOf("one binary")
		if p == other {
			want = sumOf("another binary")
		}
		if sums[i] != want {
			t.Errorf("%s: sum %q, want %q", p, sums[i], want)
		}
	}
	total := 0
	for _, n := range read() {
		total += n
	}
	if total != 2 || read()[other] != 1 {
		t.Errorf("files read and hashed: %v, want 2 reads: one of the shared file (by any of its paths) and one of %s", read(), other)
	}
}

// TestHashRefusesAFileChangedSinceItsStat: a file replaced or rewritten
// between the caller's Stat and the hash is not given a sum (which would
// be shared with paths that saw the old file).
func TestHashRefusesAFileChangedSinceItsStat(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	for name, change := range map[string]func(path string){
		"replaced": func(path string) {
			writeTestFile(t, path+".new", "the old binary") // same size, another inode
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		},
		"grown": func(path string) { writeTestFile(t, path, "the old binary, grown") },
	} {
		path := filepath.Join(dir, name)
		writeTestFile(t, path, "the old binary")
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		change(path)
		os.Chtimes(path, time.Time{}, fi.ModTime())
		sum, err := newHashes(1, nil).sum(context.Background(), path, fi)
		if err == nil || !strings.Contains(err.Error(), "changed while Discover looked at it") {
			t.Errorf("%s: sum %q, error %v; want the error that the file changed", name, sum, err)
		}
	}
}

// TestPinRefusesASwappedBinaryReachedTwice: within one Discover, a pinned
// path sharing its file with others is refused when that file is not the
// pinned one, and the file is still hashed once; the next Discover, after
// the file was swapped for another of the same size with the mtime
// restored, hashes it afresh and refuses the pin that the first file met.
func TestPinRefusesASwappedBinaryReachedTwice(t *testing.T) {
	t.Parallel()
	hook, read := countHashes()
	dir := testutil.TempDir(t)
	real := filepath.Join(dir, "real")
	first := "#!/bin/sh\nexit 3\n"
	writeTestFile(t, real, first)
	for _, name := range []string{"a", "b"} {
		if err := os.Symlink(real, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	f := &Finder{Pins: map[string]string{"a": sumOf(first), "b": sumOf("another")}, Host: host.Options{Logger: slog.New(slog.DiscardHandler)}}
	m := New(Config{Sources: []Source{f.Dirs(dir)}, Logger: slog.New(slog.DiscardHandler)})
	f.hashed = hook
	defer m.Close()
	discoverPins(t, m, map[string]bool{"a": false, "b": true})
	if n := len(read()); n != 1 || read()[filepath.Join(dir, "a")]+read()[filepath.Join(dir, "b")]+read()[real] != 1 {
		t.Errorf("files read and hashed: %v, want the shared file once", read())
	}
	fi, err := os.Stat(real)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, real+".new", "#!/bin/sh\nexit 4\n") // same size
	if err := os.Rename(real+".new", real); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(real, time.Time{}, fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	discoverPins(t, m, map[string]bool{"a": true, "b": true})
}

// discoverPins runs Discover and checks which binaries (by base name)
// their pins refused.
func discoverPins(t *testing.T, m *Manager, refused map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	for _, b := range m.Entries() {
		want, ok := refused[filepath.Base(b.Path)]
		if !ok {
			continue
		}
		var pe *host.ChecksumError
		if got := errors.As(b.Err, &pe); got != want {
			t.Errorf("%s: error %v; pin refused: %v, want %v", b.Path, b.Err, got, want)
		}
	}
}

// writeTestFile writes an executable file, holding off forks meanwhile.
func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := testutil.WriteHoldingForks(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}
