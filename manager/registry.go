package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
)

// found is an entry of the last Discover, with the Source that listed it
// (which connects to it).
type found struct {
	Entry
	src Source
}

// Discover asks every source of Config.Sources for its plugins (a
// Finder's binaries are described in parallel, unchanged ones from its
// cache without a launch; plugin services through their catalog), then
// rebuilds the registry. Bad plugins and duplicate names are reported in
// Entries and Problems, not as an error: Discover fails only when it
// cannot do its job at all (no sources, an unreadable directory, a
// malformed remotes file); Lookup then says so first.
func (m *Manager) Discover(ctx context.Context) (err error) {
	ctx, end := m.span(ctx, "plugkit.discover")
	defer func() { end(err) }()
	defer func() {
		m.mu.Lock()
		m.discoverErr = err
		m.mu.Unlock()
	}()
	if len(m.cfg.Sources) == 0 {
		return errors.New("manager: Config.Sources is empty: say where the plugins are, such as Finder.Dirs(\"./plugins\") or Finder.Remotes(...)")
	}
	var all []*found
	for _, s := range m.cfg.Sources {
		entries, err := s.Find(ctx)
		if err != nil {
			closeValues(all)
			return err
		}
		for _, e := range entries {
			all = append(all, &found{Entry: e, src: s})
		}
	}
	m.mu.Lock()
	if m.closed {
		// Close ran meanwhile: nothing would close what the sources kept.
		m.mu.Unlock()
		closeValues(all)
		return ErrClosed
	}
	old := m.found
	m.found = all
	m.discovered = true
	m.buildRegistry()
	m.mu.Unlock()
	closeValues(old)
	return nil
}

// closeValues closes the Values of entries the Manager no longer needs
// that have a Close method (a process kept for a first use that never
// came).
func closeValues(entries []*found) {
	for _, e := range entries {
		if c, ok := e.Value.(io.Closer); ok {
			c.Close()
		}
	}
}

// entry is a (kind, name) in the registry.
type entry struct {
	binary *found
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
	type pair struct{ used, other *found }
	dups := map[pair]*duplicates{}
	var pairs []pair
	for _, b := range m.found {
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
		m.problems = append(m.problems, dups[p].problem(p.used.Location.String(), p.other.Location.String()))
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

// Entries returns every plugin found by the last Discover, ordered by
// location, with its description or the reason it cannot be used.
func (m *Manager) Entries() []Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Entry, 0, len(m.found))
	for _, b := range m.found {
		out = append(out, b.Entry)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Location.String() < out[j].Location.String() })
	return out
}

// Problems returns what the last Discover found wrong beyond single
// plugins, such as duplicate names: one problem for each pair of
// plugins that claim the same (kind, name) pairs, with their count.
func (m *Manager) Problems() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.problems...)
}
