package wasmhost

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// DefaultCacheBytes is how much of Config.CacheDir compiled modules may
// fill when Config.CacheBytes is 0: about twenty compiled 30 MB guests.
const DefaultCacheBytes = 2 << 30

// cacheEntryName is the name wazero gives a compiled module in its cache
// (a hex SHA-256), and cacheTempName the file it writes one into first.
var (
	cacheEntryName = regexp.MustCompile(`^[0-9a-f]{64}$`)
	cacheTempName  = regexp.MustCompile(`^[0-9a-f]{64}\.[0-9]+\.tmp$`)
)

// staleTemp is how old a temporary file of the cache must be before a
// trim removes it: younger ones may still be written by a compile.
const staleTemp = time.Hour

// trimCache keeps Config.CacheDir within Config.CacheBytes: it removes
// the compiled modules used longest ago until the rest fit, never the
// newest one. It touches only wazero's own files (a hex name in a
// "wazero-*" directory), so a CacheDir shared with other files loses
// none of them. A removed module is compiled again when next needed.
//
// "Used" is the later of a file's modification and access times: a
// read updates the access time at most once a day on a relatime mount,
// often enough to tell a module in use from one a release left behind.
func (r *Runtime) trimCache() {
	limit := r.cfg.CacheBytes
	if r.cfg.CacheDir == "" || limit < 0 {
		return
	}
	if limit == 0 {
		limit = DefaultCacheBytes
	}
	r.trimMu.Lock()
	defer r.trimMu.Unlock()
	trimCacheDir(r.cfg.CacheDir, limit, time.Now())
}

// cacheFile is one compiled module in a cache directory.
type cacheFile struct {
	path string
	size int64
	used time.Time
}

// trimCacheDir is trimCache's work on dir, with now for the age of
// temporary files.
func trimCacheDir(dir string, limit int64, now time.Time) {
	subdirs, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var files []cacheFile
	var total int64
	for _, sd := range subdirs {
		if !sd.IsDir() || !strings.HasPrefix(sd.Name(), "wazero-") {
			continue
		}
		sub := filepath.Join(dir, sd.Name())
		entries, err := os.ReadDir(sub)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			path := filepath.Join(sub, e.Name())
			switch {
			case cacheEntryName.MatchString(e.Name()):
				files = append(files, cacheFile{path: path, size: info.Size(), used: lastUsed(info)})
				total += info.Size()
			case cacheTempName.MatchString(e.Name()) && now.Sub(info.ModTime()) > staleTemp:
				os.Remove(path) // left by a compile that died
			}
		}
	}
	if total <= limit || len(files) < 2 {
		return
	}
	sort.Slice(files, func(i, j int) bool { return files[i].used.Before(files[j].used) })
	for _, f := range files[:len(files)-1] { // the newest stays
		if total <= limit {
			return
		}
		if err := os.Remove(f.path); err == nil || os.IsNotExist(err) {
			total -= f.size
		}
	}
}
