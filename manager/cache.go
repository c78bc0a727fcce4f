package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/plugkit/plugkit/internal/filehash"
	"github.com/plugkit/plugkit/internal/osdep"
)

// cacheEntry is one binary in the cache file.
type cacheEntry struct {
	Size     int64           `json:"size"`
	ModTime  int64           `json:"mtime_ns"`
	SHA256   string          `json:"sha256"`
	Describe json.RawMessage `json:"describe"`
}

type cacheFile struct {
	Version int                    `json:"version"`
	Entries map[string]*cacheEntry `json:"entries"`
}

const cacheVersion = 1

// fileCache is a Finder's cache of Describe answers: its entries (nil
// until the cache file is first read) and those it removed, kept out of
// the merge with the file.
type fileCache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry
	dropped map[string]bool
	writeMu sync.Mutex // serialises writes of the cache file; held without mu
}

// maxCacheFile bounds the cache files the manager reads (the binaries'
// and the remotes' cache): far beyond any honest cache of Describe
// answers, it keeps a hostile or broken file from exhausting memory.
const maxCacheFile = 16 << 20

// loadCache returns a copy of the cache, reading the cache file on first
// use. The file is read without the cache's mu held: a slow or hostile
// file stalls only this Describe, bounded by ctx, never the others.
func (f *Finder) loadCache(ctx context.Context) map[string]*cacheEntry {
	fc := &f.cache
	fc.mu.Lock()
	if fc.entries != nil {
		defer fc.mu.Unlock()
		return maps.Clone(fc.entries)
	}
	fc.mu.Unlock()
	entries := map[string]*cacheEntry{}
	if f.CacheFile != "" {
		var err error
		if entries, err = readCacheFile(ctx, f.CacheFile); err != nil {
			f.logger().Warn("plugin cache ignored; every binary is described afresh and the cache is rewritten (as a regular file) when it is saved", "file", f.CacheFile, "error", err)
			if ctx.Err() != nil {
				// The file may be fine: read it again next time instead
				// of keeping the empty cache.
				return entries
			}
		}
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.entries == nil {
		fc.entries = entries
	}
	return maps.Clone(fc.entries)
}

// readCacheFile reads a cache file (see readStateFile for what it refuses)
// and parses it with parseCache. A missing file is an empty cache; any
// error comes with an empty cache.
func readCacheFile(ctx context.Context, path string) (map[string]*cacheEntry, error) {
	data, err := readStateFile(ctx, path, "plugin cache")
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*cacheEntry{}, nil
	}
	if err != nil {
		return map[string]*cacheEntry{}, err
	}
	return parseCache(data)
}

// parseCache parses the contents of a cache file. It always returns a
// map: the entries, or an empty one with the error for a malformed or
// foreign file (another version, null entries, entries without a checksum).
func parseCache(data []byte) (map[string]*cacheEntry, error) {
	entries := map[string]*cacheEntry{}
	var cf cacheFile
	if err := json.Unmarshal(data, &cf); err != nil {
		return entries, fmt.Errorf("not a plugkit plugin cache: %w", err)
	}
	if cf.Version != cacheVersion {
		return entries, fmt.Errorf("cache version %d, want %d", cf.Version, cacheVersion)
	}
	for p, e := range cf.Entries {
		if e == nil || len(e.SHA256) != 64 || !filepath.IsAbs(p) {
			return map[string]*cacheEntry{}, fmt.Errorf("malformed entry %q", p)
		}
		entries[p] = e
	}
	return entries, nil
}

// readStateFile reads a file the manager keeps its state in (what says
// which file it is, for errors), as a hostile file would not have it: it
// follows no symbolic link at the last element, opens without blocking
// (a FIFO must not hang Discover), accepts only a regular file, reads at
// most maxCacheFile bytes and stops when ctx ends. A missing file is an
// error wrapping fs.ErrNotExist.
func readStateFile(ctx context.Context, path, what string) ([]byte, error) {
	f, err := osdep.OpenNoFollow(path, os.O_RDONLY, 0)
	if errors.Is(err, osdep.ErrSymlink) {
		return nil, fmt.Errorf("the %s %s is a symbolic link, which the manager does not follow: it is replaced with a regular file when the cache is saved; set Finder.CacheFile to the link's target if that is where the cache belongs", what, path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the %s %s is not a regular file (mode %v): remove it, or set Finder.CacheFile to a file of its own; it is replaced with a regular file when the cache is saved", what, path, fi.Mode())
	}
	tooBig := func(size int64) error {
		return fmt.Errorf("the %s %s is %d bytes, more than the %d a cache may be: it is not read, and is replaced when the cache is saved; delete it if it keeps coming back", what, path, size, maxCacheFile)
	}
	if fi.Size() > maxCacheFile {
		return nil, tooBig(fi.Size())
	}
	// At most one byte more than allowed (a file that grows while read),
	// asking ctx before each read.
	buf, err := io.ReadAll(io.LimitReader(filehash.Reader(ctx, f), maxCacheFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading the %s %s: %w", what, path, err)
	}
	if len(buf) > maxCacheFile {
		return nil, tooBig(int64(len(buf)))
	}
	return buf, nil
}

// forget drops path's entry from the cache (the next Describe hashes
// and describes the file afresh, and the next save drops it from the
// file): a start found the file changed since it was described, which
// a same-size rewrite with its mtime restored hides from the cache's
// size and mtime check.
func (f *Finder) forget(path string) {
	fc := &f.cache
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if _, ok := fc.entries[path]; !ok {
		return
	}
	delete(fc.entries, path)
	if fc.dropped == nil {
		fc.dropped = map[string]bool{}
	}
	fc.dropped[path] = true
}

// saveCache records the binaries' descriptions and, when they changed,
// writes the cache file. Only the bookkeeping holds the cache's mu; the
// file is read and written under its writeMu alone.
func (f *Finder) saveCache(ctx context.Context, bins []*Entry) {
	fc := &f.cache
	fc.writeMu.Lock()
	defer fc.writeMu.Unlock()
	fc.mu.Lock()
	if fc.entries == nil {
		fc.entries = map[string]*cacheEntry{}
	}
	if fc.dropped == nil {
		fc.dropped = map[string]bool{}
	}
	changed := false
	for _, b := range bins {
		if b.Err != nil || b.Description == nil {
			if _, ok := fc.entries[b.Path]; ok {
				delete(fc.entries, b.Path)
				fc.dropped[b.Path] = true
				changed = true
			}
			continue
		}
		delete(fc.dropped, b.Path)
		if b.Cached && fc.entries[b.Path] != nil && fc.entries[b.Path].ModTime == b.ModTime.UnixNano() {
			continue
		}
		raw, _ := protojson.Marshal(b.Description)
		fc.entries[b.Path] = &cacheEntry{Size: b.Size, ModTime: b.ModTime.UnixNano(), SHA256: b.SHA256, Describe: raw}
		changed = true
	}
	cache, dropped := maps.Clone(fc.entries), maps.Clone(fc.dropped)
	fc.mu.Unlock()
	if !changed || f.CacheFile == "" {
		return
	}
	if err := writeCache(ctx, f.CacheFile, cache, dropped); err != nil {
		f.logger().Warn("plugin cache not saved", "file", f.CacheFile, "error", err)
	}
}

// writeCache merges a Finder's view (cache, less dropped) into the cache
// file at path under an exclusive lock (path.lock), so that Finders
// sharing one file keep each other's entries, and replaces the file
// atomically through a temporary file of a unique name: a symbolic link,
// FIFO or device at path is replaced, never written through. The cache's
// writeMu is held, its mu is not.
func writeCache(ctx context.Context, path string, cache map[string]*cacheEntry, dropped map[string]bool) error {
	lock, err := osdep.OpenNoFollow(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("opening the cache's lock file: %w; remove it if it is not a regular file", err)
	}
	defer lock.Close()
	if fi, err := lock.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("the cache's lock file %s is not a regular file: remove it", lock.Name())
	}
	lockCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = osdep.Lock(lockCtx, lock)
	cancel()
	if err != nil {
		return fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	merged, err := readCacheFile(ctx, path)
	if err != nil && ctx.Err() != nil {
		// The file may be fine: replacing it with this manager's view
		// alone would drop the entries of the others sharing it.
		return err
	}
	// Any other error: a broken file is replaced.
	for p := range dropped {
		delete(merged, p)
	}
	for p, e := range cache {
		merged[p] = e
	}
	data, err := json.MarshalIndent(cacheFile{Version: cacheVersion, Entries: merged}, "", "  ")
	if err != nil {
		return err
	}
	return replaceFile(path, data)
}

// replaceFile replaces path with a regular file holding data, through a
// temporary file of a unique name in the same directory (created with
// O_EXCL: a planted link there is never written through) renamed over it.
func replaceFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
