package manager

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/plugkit/plugkit/describe"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/filehash"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/wire"
)

// Binary is one plugin a Source found: an executable in a plugin
// directory, a plugin service or an attached plugin (Origin says which).
type Binary struct {
	// Path is the executable's absolute path; for a plugin service, its
	// endpoints (comma-separated); for an attached plugin, its label.
	Path string
	// Origin is the kind of source the plugin comes from.
	Origin  Origin
	Size    int64
	ModTime time.Time
	SHA256  string
	// Description is what the binary's Catalog/Describe answered; nil
	// when Err is set.
	Description *catalogv1.DescribeResponse
	// Err says why the binary cannot be used.
	Err error
	// Cached is set when Description came from the cache, without
	// launching the binary.
	Cached bool

	src    Source  // the source that found it, which connects to it
	remote *Remote // a remote plugin's entry (remoteSource)
	wasm   bool    // a WebAssembly module (runnable), run by the manager's runtime
}

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

// Discover asks every source of Config.Sources for its plugins:
// binaries in directories are described in parallel (unchanged binaries
// come from the cache without a launch; a plugkit catalog plugin writes
// its description and exits, any other is started and asked over gRPC,
// on the same process: describe.Start), plugin services through
// their catalog. It then rebuilds the registry. Bad binaries and duplicate
// names are reported in Binaries and Problems, not as an error: Discover
// fails only when it cannot do its job at all (no sources, an unreadable
// directory, a malformed remotes file).
func (m *Manager) Discover(ctx context.Context) (err error) {
	if len(m.cfg.Sources) == 0 {
		return errors.New("manager: Config.Sources is empty: say where the plugins are, such as manager.Dirs(\"./plugins\") or manager.Remotes(...)")
	}
	ctx, end := m.span(ctx, "plugkit.discover")
	defer func() { end(err) }()
	m.mu.Lock()
	unused := m.dropWarmLocked() // an earlier Discover's, never used
	m.mu.Unlock()
	for _, c := range unused {
		c.Close()
	}
	var bins []*Binary
	for _, s := range m.cfg.Sources {
		found, err := s.Find(ctx, m)
		if err != nil {
			return err
		}
		for _, b := range found {
			b.src = s
			bins = append(bins, &b)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.binaries = bins
	m.discovered = true
	m.buildRegistry()
	return nil
}

// binaryPaths lists the absolute paths of the plugin binaries in dirs (in
// order; within a directory, lexically), then files.
func binaryPaths(dirs, files []string) ([]string, error) {
	var paths []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("manager: reading plugin directory: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p, err := filepath.Abs(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			paths = append(paths, p)
		}
	}
	for _, f := range files {
		p, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// describeFiles describes the binaries at paths, in parallel, and saves
// the cache. Hashing and launching are two stages with slots of their
// own (Config.Parallelism launches; as many hashes, at most one per CPU):
// a binary is hashed (each file once, however many paths reach it) while
// others are launched. A binary's own launch waits for its hash and pin
// check: the sum is what the pin is checked against and what the cache
// records for the file that was described, so it is never taken on
// trust, even for an unpinned binary whose launch does not need it.
func (m *Manager) describeFiles(ctx context.Context, paths []string) []Binary {
	run := m.newDescribeRun(ctx)
	bins := make([]*Binary, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() { bins[i] = m.describe(ctx, p, run) })
	}
	wg.Wait()
	m.saveCache(ctx, bins)
	out := make([]Binary, len(bins))
	for i, b := range bins {
		out[i] = *b
	}
	return out
}

// describeRun is what the binaries of one Discover share: the cache as
// it was when Discover began, their hashes, and the launch slots.
type describeRun struct {
	cache  map[string]*cacheEntry
	hashes *hashes
	launch chan struct{}
}

func (m *Manager) newDescribeRun(ctx context.Context) *describeRun {
	n := m.cfg.parallelism()
	return &describeRun{cache: m.loadCache(ctx), hashes: newHashes(min(n, runtime.NumCPU()), m.hooks.hashed), launch: make(chan struct{}, n)}
}

// describe stats, hashes (when the cache cannot vouch for the file),
// checks the pin, and launches the binary for Describe when needed.
func (m *Manager) describe(ctx context.Context, path string, run *describeRun) *Binary {
	b := &Binary{Path: path, Origin: OriginDir}
	fi, err := os.Stat(path)
	if err != nil {
		b.Err = statError(path, err)
		return b
	}
	b.Size, b.ModTime = fi.Size(), fi.ModTime()
	if !fi.Mode().IsRegular() {
		b.Err = fmt.Errorf("not a regular file (%s): only plugin binaries belong in a plugin directory; move it out", fileType(fi.Mode()))
		return b
	}
	if b.wasm, err = runnable(path, fi.Mode()); err != nil { // wasm.go
		b.Err = err
		return b
	}
	// A cached checksum stands in for hashing only when nothing is
	// pinned: a same-size swap with the mtime restored must not pass a
	// pin check on the cache's word. (Within one Discover, paths to the
	// same inode, size and mtime share one hash, pinned or not.)
	_, pinned := m.pin(path)
	if ce := run.cache[path]; !pinned && ce != nil && ce.Size == b.Size && ce.ModTime == b.ModTime.UnixNano() {
		b.SHA256 = ce.SHA256
	} else if b.SHA256, err = run.hashes.sum(ctx, path, fi); err != nil {
		b.Err = err
		return b
	}
	if err := m.checkPin(path, b.SHA256); err != nil {
		m.report(host.Event{Type: host.EventPinRefused, Binary: path, Plugin: filepath.Base(path), Cause: err})
		b.Err = err
		return b
	}
	if ce := run.cache[path]; ce != nil && ce.SHA256 == b.SHA256 && len(ce.Describe) > 0 {
		d := &catalogv1.DescribeResponse{}
		if protojson.Unmarshal(ce.Describe, d) == nil && describe.Check(d) == nil {
			b.Description, b.Cached = d, true
			return b
		}
	}
	select {
	case run.launch <- struct{}{}:
		defer func() { <-run.launch }()
	case <-ctx.Done():
		b.Err = ctx.Err()
		return b
	}
	if err := m.compileWasm(ctx, path, b.wasm); err != nil { // wasm.go: outside DescribeTimeout
		b.Err = err
		return b
	}
	b.Description, b.Err = m.launchDescribe(ctx, procKey{OriginDir, path}, func(ctx context.Context) (*catalogv1.DescribeResponse, *host.Client, error) {
		return m.startDescribe(ctx, path, b.wasm)
	})
	return b
}

// startDescribe launches the binary at path for its description. Unless
// the process is to be kept (Config.KeepDescribed), a plugkit catalog
// plugin, native or WebAssembly, is asked for its description alone
// (describe.Start: no key pair, listener or gRPC; it exits once it
// has written it); any other plugin, and a kept one, is started and
// returns its Client, for Describe over gRPC. wasm says the file is a
// WebAssembly module (runnable).
func (m *Manager) startDescribe(ctx context.Context, path string, wasm bool) (*catalogv1.DescribeResponse, *host.Client, error) {
	if m.cfg.KeepDescribed {
		c, err := m.start(ctx, path, "", wasm)
		return nil, c, err
	}
	cmd, opts := m.hostConfig(path, wasm)
	opts.Telemetry = m.telemetryOf("")
	d, c, err := describe.Start(ctx, cmd, opts)
	m.countLaunch(err)
	return d, c, err
}

// launchDescribe starts a plugin (start) and asks it for its description,
// within Config.DescribeTimeout. The process is then stopped, or kept
// for the plugin's first use (Config.KeepDescribed) under key. start may
// return the description itself (the plugin wrote it and exited) instead
// of a Client.
func (m *Manager) launchDescribe(ctx context.Context, key procKey, start func(context.Context) (*catalogv1.DescribeResponse, *host.Client, error)) (d *catalogv1.DescribeResponse, err error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(m.cfg.DescribeTimeout, describe.DefaultTimeout))
	defer cancel()
	ctx, end := m.span(ctx, "plugkit.describe", attribute.String("plugkit.binary", key.path))
	defer func() { end(err) }()
	d, c, err := start(ctx)
	if err != nil || c == nil {
		return d, err // described without serving (startDescribe), or failed
	}
	d, err = describe.Conn(ctx, c.Conn())
	if err != nil || !m.keepDescribed(key, c) {
		c.Close()
	}
	return d, err
}

// keepDescribed keeps c, the process Discover started to describe the
// plugin key, for the plugin's first use, when Config.KeepDescribed says
// so and the plugin has no process yet.
func (m *Manager) keepDescribed(key procKey, c *host.Client) bool {
	if !m.cfg.KeepDescribed {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.warm[key] != nil || m.procs[key] != nil {
		return false
	}
	if m.warm == nil {
		m.warm = map[procKey]*host.Client{}
	}
	m.warm[key] = c
	return true
}

// dropWarmLocked takes the processes kept by Config.KeepDescribed that
// were not used; the caller closes them without m.mu. m.mu is held.
func (m *Manager) dropWarmLocked() []*host.Client {
	var out []*host.Client
	for k, c := range m.warm {
		out = append(out, c)
		delete(m.warm, k)
	}
	return out
}

// start launches the binary at path, counting the launch unless its pin
// refused it (then it never ran); version is the plugin's release
// version, empty when it is launched to be described (see telemetryOf);
// wasm says it is a WebAssembly
// module (runnable).
func (m *Manager) start(ctx context.Context, path, version string, wasm bool) (*host.Client, error) {
	cmd, opts := m.hostConfig(path, wasm)
	opts.Telemetry = m.telemetryOf(version)
	c, err := host.Start(ctx, cmd, opts)
	m.countLaunch(err)
	return c, err
}

// countLaunch counts a launch that ended in err, unless its pin refused
// the binary (then it never ran).
func (m *Manager) countLaunch(err error) {
	var ce *host.ChecksumError
	if !errors.As(err, &ce) {
		m.launches.Add(1)
	}
}

// hostConfig is the launch of the binary at path (a WebAssembly module
// when wasm): Config.Launch and Config.Host with what the manager sets
// itself.
func (m *Manager) hostConfig(path string, wasm bool) (host.Command, host.Options) {
	cmd := m.cfg.Launch
	cmd.Path = path
	cmd.SHA256, _ = m.pin(path) // host.Start hashes and executes the same open file
	m.forWasm(&cmd, wasm)       // wasm.go
	opts := m.cfg.Host
	opts.Versions = []int{wire.CatalogProtocolVersion}
	opts.Name = "" // host.Start's default: the binary's base name
	opts.Logger = m.cfg.logger()
	// Whether the plugin answered a failed call tells its own error from
	// a crash without waiting (process.observe).
	opts.DialOptions = append(slices.Clip(opts.DialOptions), answerDialOption)
	return cmd, opts
}

// pin returns a binary's pinned checksum, by path or base name.
func (m *Manager) pin(path string) (string, bool) {
	want, ok := m.cfg.Pins[path]
	if !ok {
		want, ok = m.cfg.Pins[filepath.Base(path)]
	}
	return want, ok
}

// checkPin compares a binary's checksum with its pin, if it has one.
func (m *Manager) checkPin(path, sum string) error {
	want, ok := m.pin(path)
	if !ok || strings.EqualFold(want, sum) {
		return nil
	}
	return &PinError{Path: path, Want: want, Got: sum}
}

// statError explains why a plugin directory's entry cannot be looked at:
// a symbolic link that loops or leads nowhere, or a file this user may not
// read, with what to do about it.
func statError(path string, err error) error {
	if li, lerr := os.Lstat(path); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		return fmt.Errorf("a symbolic link (to %q) that leads to no usable file: %w; point it at the plugin binary, or remove it", target, err)
	}
	if errors.Is(err, fs.ErrPermission) {
		user := "this user"
		if uid := os.Geteuid(); uid >= 0 { // -1 on Windows
			user = fmt.Sprintf("this user (uid %d)", uid)
		}
		return fmt.Errorf("%w: %s may not read it; fix its permissions, or move it out of the plugin directory", err, user)
	}
	return err
}

// fileType names what a non-regular file is, for errors.
func fileType(mode fs.FileMode) string {
	switch {
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + mode.String()
}

// PinError reports a binary whose checksum is not the pinned one. It was
// not run. It is host's ChecksumError: the manager's starts go through
// host.Start with Command.SHA256, which hashes and executes one open file.
type PinError = host.ChecksumError

// maxCacheFile bounds the cache files the manager reads (the binaries'
// and the remotes' cache): far beyond any honest cache of Describe
// answers, it keeps a hostile or broken file from exhausting memory.
const maxCacheFile = 16 << 20

// loadCache returns a copy of the cache, reading the cache file on first
// use. The file is read without m.mu held: a slow or hostile file stalls
// only this Discover, bounded by ctx, never the manager's other callers.
func (m *Manager) loadCache(ctx context.Context) map[string]*cacheEntry {
	m.mu.Lock()
	if m.cache != nil {
		defer m.mu.Unlock()
		return maps.Clone(m.cache)
	}
	m.mu.Unlock()
	entries := map[string]*cacheEntry{}
	if m.cfg.CacheFile != "" {
		var err error
		if entries, err = readCacheFile(ctx, m.cfg.CacheFile); err != nil {
			m.cfg.logger().Warn("plugin cache ignored; every binary is described afresh and the cache is rewritten (as a regular file) when it is saved", "file", m.cfg.CacheFile, "error", err)
			if ctx.Err() != nil {
				// The file may be fine: read it again next time instead
				// of keeping the empty cache.
				return entries
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cache == nil {
		m.cache = entries
	}
	return maps.Clone(m.cache)
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
		return nil, fmt.Errorf("the %s %s is a symbolic link, which the manager does not follow: it is replaced with a regular file when the cache is saved; set Config.CacheFile to the link's target if that is where the cache belongs", what, path)
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
		return nil, fmt.Errorf("the %s %s is not a regular file (mode %v): remove it, or set Config.CacheFile to a file of its own; it is replaced with a regular file when the cache is saved", what, path, fi.Mode())
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

// saveCache records the binaries' descriptions and, when they changed,
// writes the cache file. Only the bookkeeping holds m.mu; the file is
// read and written under cacheWriteMu alone.
func (m *Manager) saveCache(ctx context.Context, bins []*Binary) {
	m.cacheWriteMu.Lock()
	defer m.cacheWriteMu.Unlock()
	m.mu.Lock()
	changed := false
	for _, b := range bins {
		if b.Err != nil || b.Description == nil {
			if _, ok := m.cache[b.Path]; ok {
				delete(m.cache, b.Path)
				m.dropped[b.Path] = true
				changed = true
			}
			continue
		}
		delete(m.dropped, b.Path)
		if b.Cached && m.cache[b.Path] != nil && m.cache[b.Path].ModTime == b.ModTime.UnixNano() {
			continue
		}
		raw, _ := protojson.Marshal(b.Description)
		m.cache[b.Path] = &cacheEntry{Size: b.Size, ModTime: b.ModTime.UnixNano(), SHA256: b.SHA256, Describe: raw}
		changed = true
	}
	cache, dropped := maps.Clone(m.cache), maps.Clone(m.dropped)
	m.mu.Unlock()
	if !changed || m.cfg.CacheFile == "" {
		return
	}
	if err := m.writeCache(ctx, cache, dropped); err != nil {
		m.cfg.logger().Warn("plugin cache not saved", "file", m.cfg.CacheFile, "error", err)
	}
}

// writeCache merges this manager's view (cache, less dropped) into the
// cache file under an exclusive lock (CacheFile.lock), so that managers
// sharing one file keep each other's entries, and replaces the file
// atomically through a temporary file of a unique name: a symbolic link,
// FIFO or device at CacheFile is replaced, never written through.
// m.cacheWriteMu is held, m.mu is not.
func (m *Manager) writeCache(ctx context.Context, cache map[string]*cacheEntry, dropped map[string]bool) error {
	lock, err := osdep.OpenNoFollow(m.cfg.CacheFile+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("opening the cache's lock file: %w; remove it if it is not a regular file", err)
	}
	defer lock.Close()
	if fi, err := lock.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("the cache's lock file %s is not a regular file: remove it", lock.Name())
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := osdep.TryLock(lock)
		if err == nil {
			break
		}
		if !errors.Is(err, osdep.ErrLocked) || time.Now().After(deadline) {
			return fmt.Errorf("locking %s: %w", lock.Name(), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("locking %s: %w", lock.Name(), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	merged, err := readCacheFile(ctx, m.cfg.CacheFile)
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
	return replaceFile(m.cfg.CacheFile, data)
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

// entry is a (kind, name) in the registry.
type entry struct {
	binary *Binary
	kind   *catalogv1.Kind
}

type regKey struct{ kind, name string }

// buildRegistry maps (kind, name) to binaries in precedence order: the
// order of Config.Sources, then each source's own order. Later duplicates
// are reported in problems: one problem per pair of binaries, with the
// count of (kind, name) pairs both claim and the first few of them, so
// that problems stay as many as pairs of binaries whatever the answers
// claim.
func (m *Manager) buildRegistry() {
	m.registry = map[regKey]*entry{}
	m.problems = nil
	type pair struct{ used, other *Binary }
	dups := map[pair]*duplicates{}
	var pairs []pair
	for _, b := range m.binaries {
		if b.Err != nil {
			continue
		}
		for _, k := range mergeKinds(b.Description.GetKinds()) {
			var names []string
			for _, maj := range k.GetMajors() {
				names = append(names, maj.GetNames()...)
			}
			slices.Sort(names)
			for _, n := range slices.Compact(names) {
				key := regKey{k.GetName(), n}
				prev, dup := m.registry[key]
				if !dup {
					m.registry[key] = &entry{binary: b, kind: k}
					continue
				}
				if prev.binary == b {
					continue
				}
				p := pair{prev.binary, b}
				d := dups[p]
				if d == nil {
					d = &duplicates{}
					dups[p] = d
					pairs = append(pairs, p)
				}
				d.add(key)
			}
		}
	}
	for _, p := range pairs {
		m.problems = append(m.problems, dups[p].problem(p.used.Path, p.other.Path))
	}
	sort.Strings(m.problems)
	m.addAttachedLocked()
}

// duplicateExamples is how many of the (kind, name) pairs two binaries
// both claim their problem names.
const duplicateExamples = 3

// duplicates are the (kind, name) pairs one binary claims that an earlier
// one already has: their count, and the first few.
type duplicates struct {
	count    int
	examples []regKey
}

func (d *duplicates) add(key regKey) {
	d.count++
	if len(d.examples) < duplicateExamples {
		d.examples = append(d.examples, key)
	}
}

// problem says which binary is used for the pairs both claim.
func (d *duplicates) problem(used, other string) string {
	const why = "(earlier source in Config.Sources, earlier directory, then lexical order)"
	if d.count == 1 {
		key := d.examples[0]
		return fmt.Sprintf("duplicate: %s %q is in both %s and %s; using %s %s", key.kind, key.name, used, other, used, why)
	}
	var ex []string
	for _, key := range d.examples {
		ex = append(ex, fmt.Sprintf("%s %q", key.kind, key.name))
	}
	more := ""
	if d.count > len(d.examples) {
		more = ", ..."
	}
	return fmt.Sprintf("duplicate: %d (kind, name) pairs are in both %s and %s (%s%s); using %s for all of them %s",
		d.count, used, other, strings.Join(ex, ", "), more, used, why)
}

// mergeKinds returns one Kind for each kind name, holding the majors of
// every Kind of that name in their order: an answer that lists a kind
// twice (package catalog never does; another implementation may) keeps
// the majors of both, and its names are registered and reported once.
func mergeKinds(kinds []*catalogv1.Kind) []*catalogv1.Kind {
	var out []*catalogv1.Kind
	byName := map[string]*catalogv1.Kind{}
	for _, k := range kinds {
		m := byName[k.GetName()]
		if m == nil {
			m = &catalogv1.Kind{Name: k.GetName()}
			byName[k.GetName()] = m
			out = append(out, m)
		}
		m.Majors = append(m.Majors, k.GetMajors()...)
	}
	return out
}

// Binaries returns every executable found by the last Discover, in path
// order, with its description or the reason it cannot be used.
func (m *Manager) Binaries() []Binary {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Binary, 0, len(m.binaries))
	for _, b := range m.binaries {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Problems returns what the last Discover found wrong beyond single
// binaries, such as duplicate names: one problem for each pair of
// binaries that claim the same (kind, name) pairs, with their count.
func (m *Manager) Problems() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.problems...)
}

// DescribeBinary describes one binary, wherever it is, without adding it
// to the registry.
func (m *Manager) DescribeBinary(ctx context.Context, path string) Binary {
	b := *m.describe(ctx, path, m.newDescribeRun(ctx))
	b.src = fileSource{files: []string{path}}
	return b
}
