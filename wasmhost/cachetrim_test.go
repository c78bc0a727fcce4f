package wasmhost_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/wasmhost"
)

// TestCacheDirStaysWithinCacheBytes: every release of a guest compiled
// into CacheDir used to stay there for good (a compiled 30 MB guest is
// about 90 MB; the tests' own cache reached 13 GB in days). After a
// compile, the modules used longest ago go until the rest fit in
// CacheBytes; files that are not wazero's stay.
func TestCacheDirStaysWithinCacheBytes(t *testing.T) {
	dir := testutil.TempDir(t)
	sub := filepath.Join(dir, "wazero-v0.0.0-test")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	now := time.Now()
	entry := func(i int) string { return filepath.Join(sub, strings.Repeat(string(rune('a'+i)), 64)) }
	// Six compiled modules of 1 MiB, entry(0) the oldest.
	for i := range 6 {
		if err := os.WriteFile(entry(i), make([]byte, mib), 0o600); err != nil {
			t.Fatal(err)
		}
		at := now.Add(time.Duration(i-10) * time.Hour)
		if err := os.Chtimes(entry(i), at, at); err != nil {
			t.Fatal(err)
		}
	}
	atimes := runtime.GOOS == "linux" || runtime.GOOS == "darwin" || runtime.GOOS == "freebsd"
	if atimes { // entry(1) was written long ago but read a minute ago
		if err := os.Chtimes(entry(1), now.Add(-time.Minute), now.Add(-9*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	keep := []string{
		filepath.Join(sub, "notes.txt"),
		filepath.Join(dir, "other", strings.Repeat("f", 64)),
		filepath.Join(sub, strings.Repeat("e", 64)+".123.tmp"), // a compile writing now
	}
	for _, p := range keep {
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, make([]byte, mib), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stale := filepath.Join(sub, strings.Repeat("d", 64)+".456.tmp")
	if err := os.WriteFile(stale, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := now.Add(-2 * time.Hour)
	os.Chtimes(stale, old, old)

	rt := wasmhost.New(wasmhost.Config{CacheDir: dir, CacheBytes: 3*mib + mib/2})
	defer rt.Close(context.Background())
	if err := rt.Compile(context.Background(), manyFunctions(3)); err != nil {
		t.Fatal(err)
	}

	var total int64
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && len(d.Name()) == 64 && filepath.Base(filepath.Dir(p)) != "other" {
			info, _ := d.Info()
			total += info.Size()
			left = append(left, p)
		}
		return nil
	})
	if total > 3*mib+mib/2 {
		t.Errorf("CacheDir holds %d bytes of compiled modules after a compile, want at most CacheBytes (%d): %v", total, 3*mib+mib/2, left)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if exists(entry(0)) {
		t.Errorf("the module used longest ago (%s) is still in the cache", entry(0))
	}
	if !exists(entry(5)) || !exists(entry(4)) {
		t.Errorf("the modules used last were removed: %v", left)
	}
	if atimes && !exists(entry(1)) {
		t.Errorf("a module read a minute ago was removed for its old modification time")
	}
	for _, p := range keep {
		if !exists(p) {
			t.Errorf("%s is not a finished compiled module of wazero's, yet it was removed", p)
		}
	}
	if exists(stale) {
		t.Errorf("a temporary file left two hours ago by a compile stays in the cache")
	}
}

// TestCacheBytesNegativeKeepsAll: a negative CacheBytes is no bound.
func TestCacheBytesNegativeKeepsAll(t *testing.T) {
	dir := testutil.TempDir(t)
	sub := filepath.Join(dir, "wazero-v0.0.0-test")
	os.MkdirAll(sub, 0o700)
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(sub, strings.Repeat(string(rune('a'+i)), 64)), make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rt := wasmhost.New(wasmhost.Config{CacheDir: dir, CacheBytes: -1})
	defer rt.Close(context.Background())
	if err := rt.Compile(context.Background(), manyFunctions(3)); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(sub)
	if len(ents) != 3 {
		t.Errorf("CacheBytes -1: %d files left of 3, want all", len(ents))
	}
}
