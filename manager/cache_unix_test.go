//go:build !windows

package manager_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// discoverWithHostileCache runs Discover over a directory with one plugin
// and the given cache file, and checks that it returns within its
// deadline, finds the plugin, and warns naming the cache file with the
// words in want. It returns the warning log.
func discoverWithHostileCache(t *testing.T, dir, cache string, want ...string) string {
	t.Helper()
	var logs testutil.Buffer
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache, Host: host.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	discoverWithinDeadline(t, m)
	defer m.Close()
	if _, err := m.Lookup("objectstore", "x"); err != nil {
		t.Errorf("the plugin was not found beside the bad cache: %v", err)
	}
	out := logs.String()
	for _, w := range append([]string{"plugin cache ignored", cache}, want...) {
		if !strings.Contains(out, w) {
			t.Errorf("the log lacks %q:\n%s", w, out)
		}
	}
	return out
}

// checkRewritten checks that the cache file is now a regular file that a
// new manager uses (no launch).
func checkRewritten(t *testing.T, dir, cache string) {
	t.Helper()
	fi, err := os.Lstat(cache)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the cache was not rewritten as a regular file: %v, %v", fi, err)
	}
	warm := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache}
	if newManager(t, manager.Config{Sources: []manager.Source{warm.Dirs(dir)}}); warm.Launches() != 0 {
		t.Errorf("%d launches with the rewritten cache, want 0", warm.Launches())
	}
}

// TestCacheFIFO: a FIFO as the cache file (nobody ever writes to it) does
// not hang Discover; it is reported and replaced.
func TestCacheFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writePlugin(t, dir, "a", "x 1")
	cache := filepath.Join(t.TempDir(), "cache.json")
	if err := syscall.Mkfifo(cache, 0o600); err != nil {
		t.Fatal(err)
	}
	discoverWithHostileCache(t, dir, cache, "not a regular file")
	checkRewritten(t, dir, cache)
}

// TestCacheSymlinkToDevZero: a cache file that is a symbolic link to
// /dev/zero is not followed (reading it would never end); the cache is
// rewritten in the link's place, not through it.
func TestCacheSymlinkToDevZero(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writePlugin(t, dir, "a", "x 1")
	cache := filepath.Join(t.TempDir(), "cache.json")
	if err := os.Symlink("/dev/zero", cache); err != nil {
		t.Fatal(err)
	}
	discoverWithHostileCache(t, dir, cache, "symbolic link")
	checkRewritten(t, dir, cache)
	if fi, err := os.Stat("/dev/zero"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("/dev/zero is no longer a character device: %v, %v", fi, err)
	}
}

// TestCacheSymlinkNotWrittenThrough: a cache file that links to another
// file leaves that file as it was.
func TestCacheSymlinkNotWrittenThrough(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writePlugin(t, dir, "a", "x 1")
	victim := filepath.Join(t.TempDir(), "victim")
	writeFile(t, victim, "precious", 0o600)
	cache := filepath.Join(t.TempDir(), "cache.json")
	if err := os.Symlink(victim, cache); err != nil {
		t.Fatal(err)
	}
	discoverWithHostileCache(t, dir, cache, "symbolic link")
	checkRewritten(t, dir, cache)
	if data, err := os.ReadFile(victim); err != nil || string(data) != "precious" {
		t.Errorf("the link's target was changed: %q, %v", data, err)
	}
}

// TestCacheHugeFile: a 100 MiB cache file is refused without being read
// (at most 16 MiB are), reported with its size, and replaced.
func TestCacheHugeFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writePlugin(t, dir, "a", "x 1")
	cache := filepath.Join(t.TempDir(), "cache.json")
	f, err := os.Create(cache)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"version":1,"entries":{` + strings.Repeat(" ", 1<<10)); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil { // the rest are holes
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	discoverWithHostileCache(t, dir, cache, "104857600 bytes, more than the 16777216")
	runtime.ReadMemStats(&after)
	// Reading the file would allocate its 100 MiB; a whole Discover
	// without it allocates a few MiB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("Discover allocated %d MiB beside a 100 MiB cache: it read the file", alloc>>20)
	}
	checkRewritten(t, dir, cache)
}

// discoverWithinDeadline runs m.Discover with a 10 s deadline and fails
// the test when it errs or is still running 30 s later (m is then left
// open: Close would wait for the stuck Discover).
func discoverWithinDeadline(t *testing.T, m *manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Discover(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Discover: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Discover still running 30 s after its 10 s deadline")
	}
}
