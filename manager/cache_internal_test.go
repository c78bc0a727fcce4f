package manager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestReadCacheFileHonoursContext: a cache read whose context has ended
// stops with the context's error and an empty cache, and loadCache keeps
// no empty cache from it (the next Discover reads the file again).
func TestReadCacheFileHonoursContext(t *testing.T) {
	t.Parallel()
	path := filepath.Join(testutil.TempDir(t), "cache.json")
	sum := strings.Repeat("0", 64)
	if err := os.WriteFile(path, []byte(`{"version":1,"entries":{`+strconv.Quote(rooted("p"))+`:{"sha256":"`+sum+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if entries, err := readCacheFile(context.Background(), path); err != nil || len(entries) != 1 {
		t.Fatalf("a good cache: %v, %v", entries, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	entries, err := readCacheFile(ctx, path)
	if !errors.Is(err, context.Canceled) || len(entries) != 0 || !strings.Contains(err.Error(), path) {
		t.Errorf("a cancelled read: %v, %v; want context.Canceled naming the file and no entries", entries, err)
	}
	f := &Finder{CacheFile: path}
	if got := f.loadCache(ctx); len(got) != 0 {
		t.Errorf("loadCache with an ended context: %v", got)
	}
	if got := f.loadCache(context.Background()); len(got) != 1 {
		t.Errorf("loadCache after an ended context's try: %v, want the file's entry (read again)", got)
	}
}

// TestWriteCacheKeepsOthersWhenContextEnds: a cache write whose context
// has ended by the time it reads the file to merge leaves the file as it
// was (the other managers' entries in it) rather than replacing it with
// this manager's entries alone.
func TestWriteCacheKeepsOthersWhenContextEnds(t *testing.T) {
	t.Parallel()
	path := filepath.Join(testutil.TempDir(t), "cache.json")
	sum := strings.Repeat("0", 64)
	shared := `{"version":1,"entries":{` + strconv.Quote(rooted("other")) + `:{"sha256":"` + sum + `"}}}`
	if err := os.WriteFile(path, []byte(shared), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := writeCache(ctx, path, map[string]*cacheEntry{rooted("mine"): {SHA256: sum}}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("writeCache with an ended context: %v, want context.Canceled", err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != shared {
		t.Errorf("the shared cache after the write: %s, %v; want it as it was, with /other", data, err)
	}
	if err := writeCache(context.Background(), path, map[string]*cacheEntry{rooted("mine"): {SHA256: sum}}, nil); err != nil {
		t.Fatal(err)
	}
	if entries, err := readCacheFile(context.Background(), path); err != nil || entries[rooted("other")] == nil || entries[rooted("mine")] == nil {
		t.Errorf("the shared cache after a write: %v, %v; want /other and /mine", entries, err)
	}
}

// rooted is an absolute path to name at the file system's root, as the
// cache keeps paths: /name, or C:\name on Windows.
func rooted(name string) string {
	if runtime.GOOS == "windows" {
		return `C:\` + name
	}
	return "/" + name
}
