package manager

import (
	"fmt"
	"strings"
	"testing"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
)

// manyKinds is a Describe answer claiming n (kind, name) pairs: n kinds,
// each with the one-byte name "a", the cheapest pairs an answer can hold.
func manyKinds(n int) *catalogv1.DescribeResponse {
	d := &catalogv1.DescribeResponse{}
	for i := range n {
		d.Kinds = append(d.Kinds, &catalogv1.Kind{Name: fmt.Sprintf("k%d", i), Majors: []*catalogv1.Major{{Major: 1, Names: []string{"a"}}}})
	}
	return d
}

// registryOf builds the registry of binaries that all give answer d.
func registryOf(binaries int, d *catalogv1.DescribeResponse) *Manager {
	m := New(Config{Sources: []Source{(&Finder{}).Dirs("/plugins")}})
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range binaries {
		m.found = append(m.found, &found{Entry: Entry{Location: Location{Origin: OriginDir, Path: fmt.Sprintf("/plugins/%02d-%s", i, strings.Repeat("p", 200))}, Description: d}})
	}
	m.buildRegistry()
	return m
}

// TestDuplicateNamesOneProblemPerPair: binaries that all claim the same
// (kind, name) pairs make one problem per pair of binaries, with the
// count and a few examples, not one per (kind, name) holding both paths
// (20 binaries of 130k pairs each made 2.47M strings, 1.95 GB).
func TestDuplicateNamesOneProblemPerPair(t *testing.T) {
	t.Parallel()
	const binaries, pairs = 20, 2000
	m := registryOf(binaries, manyKinds(pairs))
	defer m.Close()
	problems := m.Problems()
	if len(problems) != binaries-1 {
		t.Fatalf("%d binaries claiming the same %d pairs made %d problems, want %d (one per later binary)", binaries, pairs, len(problems), binaries-1)
	}
	for _, p := range problems {
		if !strings.Contains(p, fmt.Sprintf("duplicate: %d (kind, name) pairs", pairs)) || !strings.Contains(p, "using /plugins/00-") || len(p) > 1024 {
			t.Errorf("problem %q (%d bytes): want the count, the binary used, and under 1 KiB", p[:min(len(p), 300)], len(p))
		}
	}
	if len(m.registry) != pairs {
		t.Errorf("the registry has %d entries, want %d", len(m.registry), pairs)
	}
}

// BenchmarkDuplicateNames builds the registry of 20 binaries that claim
// the same pairs (Discover's last step): N pairs each, as many as
// describe.MaxNames allows. It reports the problems' bytes and count.
func BenchmarkDuplicateNames(b *testing.B) {
	d := manyKinds(10000)
	for b.Loop() {
		m := registryOf(20, d)
		n := 0
		for _, p := range m.problems {
			n += len(p)
		}
		b.ReportMetric(float64(n), "problem-bytes")
		b.ReportMetric(float64(len(m.problems)), "problems")
		m.Close()
	}
}
