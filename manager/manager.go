package manager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
)

// ErrClosed is returned by a closed Manager or Conn.
var ErrClosed = errors.New("manager: closed")

// Manager is the running side: it keeps the registry of what its
// sources found, runs one shared process per plugin, started on first use
// and restarted after a crash, and dispenses clients. Its methods are
// safe for concurrent use.
type Manager struct {
	cfg Config

	mu          sync.Mutex
	closed      bool
	discovered  bool  // Discover has run to the end at least once
	discoverErr error // the last Discover's failure
	found       []*found
	registry    map[regKey]*entry
	attached    map[regKey]*entry // Attach's names, kept across Discovers
	problems    []string
	procs       map[procKey]*process
	// moved are processes an upgrade moved to a release whose key
	// another process had already.
	moved []*process
	// rolledBack maps a plugin's place (Origin and Location) to the
	// release last rolled back there, which Refresh does not try again
	// and Lookup does not hand out: one entry per place at most.
	rolledBack map[string]rollback
	// done is closed by Close: upgrades on probation end; stop cancels
	// their contexts, and Close waits for upgrades to end.
	done     chan struct{}
	stop     context.Context
	cancel   context.CancelFunc
	upgrades sync.WaitGroup
	watching bool      // Watch runs
	hooks    testHooks // set by tests alone (export_test.go)
}

// testHooks tell a test what it cannot see otherwise; each is nil but in
// tests.
type testHooks struct {
	exitWait func() // a failed call waits for its plugin's exit
}

// New returns a Manager. Call Discover before using it.
func New(cfg Config) *Manager {
	stop, cancel := context.WithCancel(context.Background())
	return &Manager{cfg: cfg, procs: map[procKey]*process{}, rolledBack: map[string]rollback{}, done: make(chan struct{}), stop: stop, cancel: cancel}
}

// procKey names a plugin's one process: its origin and location.
type procKey struct {
	origin Origin
	where  string
}

// Implementation is a (kind, name) as the registry knows it.
type Implementation struct {
	Kind, Name string
	// Path and Origin say where the plugin is (Path is its
	// Location.String()).
	Path          string
	Origin        Origin
	PluginVersion string
	// Majors are the majors the binary serves for this name, highest first.
	Majors []*catalogv1.Major

	bin *found // the plugin Lookup found, which Dispense runs
}

// Lookup finds the plugin that implements (kind, name). Its error names
// the cause first: Discover's failure, the plugins found that could not
// be used, or the names the kind has.
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
		if len(names) == 0 {
			return Implementation{}, m.noKindLocked(kind)
		}
		msg := fmt.Sprintf("no plugin implements %s %q; the %s plugins are: %s", kind, name, kind, strings.Join(names, ", "))
		if bad := m.unusableLocked(); bad != "" {
			msg += "\n" + bad
		}
		return Implementation{}, errors.New(msg)
	}
	bin, majors := e.binary, e.kind.GetMajors()
	if rb, ok := m.rolledBack[placeKey(*bin)]; ok && rb.bad == releaseKey(*bin) {
		// The sources hold a release rolled back: the one that serves
		// instead is what a Dispense gets.
		bin, majors = &rb.to, nil
		for _, k := range mergeKinds(rb.to.Description.GetKinds()) {
			if k.GetName() == kind {
				majors = k.GetMajors()
			}
		}
	}
	im := Implementation{Kind: kind, Name: name, Path: bin.Location.String(), Origin: bin.Origin, PluginVersion: bin.Description.GetPluginVersion(), bin: bin}
	for _, maj := range majors {
		for _, n := range maj.GetNames() {
			if n == name {
				im.Majors = append(im.Majors, maj)
				break
			}
		}
	}
	return im, nil
}

// noKindLocked says why no plugin implements kind, its cause first:
// Discover's failure, Discover not run, or the plugins found that could
// not be used (a wrong cookie, say). m.mu is held.
func (m *Manager) noKindLocked(kind string) error {
	switch {
	case m.discoverErr != nil:
		return fmt.Errorf("the last Discover failed: %w; so no plugin implements kind %q: fix that and call Manager.Discover again", m.discoverErr, kind)
	case !m.discovered:
		return fmt.Errorf("no plugin implements kind %q: Discover has not run, so no plugin directory was searched: call Manager.Discover after New, before Lookup, Dispense or a kind's Open", kind)
	}
	if bad := m.unusableLocked(); bad != "" {
		return fmt.Errorf("%s\nso no plugin implements kind %q (searched %s; fix them, or run Discover after adding plugins)", bad, kind, m.searched())
	}
	return fmt.Errorf("no plugin implements kind %q (searched %s; run Discover after adding plugins)", kind, m.searched())
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
	key := procKey{im.bin.Origin, im.Path}
	p, ok := m.procs[key]
	if !ok {
		p = newProcess(m, *im.bin)
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
	close(m.done)
	m.cancel()
	procs, found := slices.Collect(maps.Values(m.procs)), m.found
	procs = append(procs, m.moved...)
	m.procs, m.found, m.moved = nil, nil, nil
	m.mu.Unlock()
	closeValues(found)
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.close()
		}()
	}
	wg.Wait()
	m.upgrades.Wait()
	return nil
}

// unusableLocked lists the plugins the last Discover could not use, one
// per line with the reason, for errors that would otherwise leave a user
// guessing why their plugin is not found (a wrong cookie, a plain
// go-plugin plugin, a file that is not executable, ...); "" when there
// are none. m.mu is held.
func (m *Manager) unusableLocked() string {
	var bad []*found
	for _, b := range m.found {
		if b.Err != nil {
			bad = append(bad, b)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].Location.String() < bad[j].Location.String() })
	var sb strings.Builder
	if len(bad) == 1 {
		sb.WriteString("1 plugin found could not be used:")
	} else {
		fmt.Fprintf(&sb, "%d plugins found could not be used:", len(bad))
	}
	for _, b := range bad {
		fmt.Fprintf(&sb, "\n  %s: %s", b.Location.String(), strings.Join(strings.Fields(b.Err.Error()), " "))
	}
	return sb.String()
}
