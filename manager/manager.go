package manager

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/host"
)

// ErrClosed is returned by a closed Manager or Conn.
var ErrClosed = errors.New("manager: closed")

// Manager discovers plugins and runs them. Its methods are safe for
// concurrent use.
type Manager struct {
	cfg      Config
	launches atomic.Int64

	mu            sync.Mutex
	closed        bool
	discovered    bool // Discover has run to the end at least once
	cache         map[string]*cacheEntry
	binaries      []*Binary
	dropped       map[string]bool // cache entries this manager removed, kept out of the merge
	registry      map[regKey]*entry
	attached      map[regKey]*entry // Attach's names, kept across Discovers
	problems      []string
	procs         map[procKey]*process
	warm          map[procKey]*host.Client // kept by Config.KeepDescribed until first use
	remoteCacheMu sync.Mutex               // serialises writes of the remote cache (remote.go)
	cacheWriteMu  sync.Mutex               // serialises writes of the cache file; held without mu
	wasm          wasmGuests               // the runtime of WebAssembly plugins (wasm.go)
	hooks         testHooks                // set by tests alone (export_test.go)
}

// testHooks tell a test what it cannot see otherwise; each is nil but in
// tests.
type testHooks struct {
	exitWait func()            // a failed call waits for its plugin's exit
	hashed   func(path string) // a file is about to be read and hashed
}

// New returns a Manager. Call Discover before using it.
func New(cfg Config) *Manager {
	return &Manager{cfg: cfg, procs: map[procKey]*process{}, dropped: map[string]bool{}}
}

// procKey names a plugin's one process: its origin and Path.
type procKey struct {
	origin Origin
	path   string
}

// Launches counts the plugin processes the Manager has started, for
// Describe and for use.
func (m *Manager) Launches() int64 { return m.launches.Load() }

// Implementation is a (kind, name) as the registry knows it.
type Implementation struct {
	Kind, Name string
	// Path and Origin say where the plugin is (see Binary).
	Path          string
	Origin        Origin
	PluginVersion string
	// Majors are the majors the binary serves for this name, highest first.
	Majors []*catalogv1.Major

	bin *Binary // the plugin Lookup found, which Dispense runs
}

// Lookup finds the binary that implements (kind, name).
func (m *Manager) Lookup(kind, name string) (Implementation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Implementation{}, ErrClosed
	}
	e, ok := m.registry[regKey{kind, name}]
	if !ok {
		var names []string
		for k := range m.registry {
			if k.kind == kind {
				names = append(names, k.name)
			}
		}
		sort.Strings(names)
		if len(names) == 0 && !m.discovered {
			return Implementation{}, fmt.Errorf("no plugin implements kind %q: Discover has not run, so no plugin directory was searched: call Manager.Discover after New, before Lookup, Dispense or a kind's Open", kind)
		}
		if len(names) == 0 {
			return Implementation{}, fmt.Errorf("no plugin implements kind %q (searched %s; run Discover after adding plugins)%s", kind, m.searched(), m.unusableLocked())
		}
		return Implementation{}, fmt.Errorf("no plugin implements %s %q; the %s plugins are: %s%s", kind, name, kind, strings.Join(names, ", "), m.unusableLocked())
	}
	im := Implementation{Kind: kind, Name: name, Path: e.binary.Path, Origin: e.binary.Origin, PluginVersion: e.binary.Description.GetPluginVersion(), bin: e.binary}
	for _, maj := range e.kind.GetMajors() {
		for _, n := range maj.GetNames() {
			if n == name {
				im.Majors = append(im.Majors, maj)
				break
			}
		}
	}
	return im, nil
}

// searched names the sources, for errors.
func (m *Manager) searched() string {
	var s []string
	for _, src := range m.cfg.Sources {
		s = append(s, fmt.Sprint(src))
	}
	return strings.Join(s, "; ")
}

// process returns the shared process of the plugin that Lookup found for
// im, creating its handle.
func (m *Manager) process(im Implementation) (*process, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	key := procKey{im.bin.Origin, im.bin.Path}
	p, ok := m.procs[key]
	if !ok {
		p = &process{m: m, bin: *im.bin, path: im.bin.Path, lock: make(chan struct{}, 1)}
		if c := m.warm[key]; c != nil {
			// The process Discover described the plugin with.
			p.client, p.gen, p.started = c, 1, time.Now()
			delete(m.warm, key)
		}
		m.procs[key] = p
	}
	return p, nil
}

// Close stops every plugin process. Conns dispensed earlier fail from
// then on with ErrClosed.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	procs := m.procs
	m.procs = nil
	unused := m.dropWarmLocked()
	m.mu.Unlock()
	for _, c := range unused {
		c.Close()
	}
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.close()
		}()
	}
	wg.Wait()
	m.wasm.close()
	return nil
}

// unusableLocked lists the binaries the last Discover could not use, one
// per line with the reason, for errors that would otherwise leave a user
// guessing why their plugin is not found (a wrong cookie, a plain
// go-plugin plugin, a file that is not executable, ...). m.mu is held.
func (m *Manager) unusableLocked() string {
	var bad []*Binary
	for _, b := range m.binaries {
		if b.Err != nil {
			bad = append(bad, b)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].Path < bad[j].Path })
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d binaries in the plugin directories could not be used:", len(bad))
	for _, b := range bad {
		fmt.Fprintf(&sb, "\n  %s: %s", b.Path, strings.Join(strings.Fields(b.Err.Error()), " "))
	}
	return sb.String()
}
