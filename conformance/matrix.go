package conformance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/plugkit/plugkit/compat"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/hostwire"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/manager"
)

// Mode is what a Cell found: how the host major used the plugin, or why
// it could not.
type Mode string

// Modes of a Cell.
const (
	// ModeDirect: the host major's own client serves the plugin, and the
	// suite passed.
	ModeDirect Mode = "direct"
	// ModeAdapter: the plugin speaks an older major, the host's adapter
	// presents it as the host major, and the suite passed through it.
	ModeAdapter Mode = "adapter"
	// ModeIncompatible: the plugin speaks no major this host can use;
	// Advice says which release to pick. Information, not a failure.
	ModeIncompatible Mode = "incompatible"
	// ModeFailing: the plugin could be used (or should have been) but
	// failed cases, listed in Failures.
	ModeFailing Mode = "failing"
)

// Cell is one plugin release against one host major.
type Cell struct {
	// Plugin is the implementation's name (example.com/fs); for a binary
	// that could not be described, its file name.
	Plugin string `json:"plugin"`
	// Version is the plugin release (from Describe).
	Version string `json:"version"`
	// Binary is the file the cell ran.
	Binary    string    `json:"binary"`
	HostMajor int       `json:"host_major"`
	Mode      Mode      `json:"mode"`
	Passed    int       `json:"passed"`
	Failed    int       `json:"failed"`
	Failures  []Failure `json:"failures"`
	// Advice is the release resolver's advice for an incompatible cell.
	Advice string `json:"advice"`
	// Via says, for a failing cell, the path it failed on: ModeDirect or
	// ModeAdapter (empty when it failed before that: start, dispense).
	Via Mode `json:"via,omitempty"`
}

// Host is one major of a kind's host: how it dispenses a client and
// which suite that client must pass. Build it with HostMajor.
type Host struct {
	Major int
	kind  string
	run   func(ctx context.Context, m *manager.Manager, name string) (Report, error)
	// majors the host major dispenses, highest first
	majors []int
}

// HostMajor describes the host of major: majors is what it passes to
// manager.Dispense (its own major and its adapters, as its Open function
// does), suite what its clients must pass.
func HostMajor[T any](suite Suite[T], majors manager.Majors[T]) Host {
	h := Host{Major: suite.Major, kind: suite.Kind}
	for v := range majors {
		h.majors = append(h.majors, v)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(h.majors)))
	h.run = func(ctx context.Context, m *manager.Manager, name string) (Report, error) {
		client, err := manager.Dispense(ctx, m, suite.Kind, name, majors)
		if err != nil {
			return Report{}, err
		}
		return suite.Run(ctx, client), nil
	}
	return h
}

// Matrix runs a kind's suites over plugin binaries.
type Matrix struct {
	// Kind is the plugin kind; binaries without an implementation of it
	// are left out.
	Kind string
	// Cookie is the plugins' magic cookie.
	Cookie handshake.Cookie
	// Hosts are the host majors to test, one HostMajor each.
	Hosts []Host
	// Releases, when set, gives incompatible cells the release to pick.
	Releases *compat.Index
	// Parallelism bounds how many binaries run at once; 0 means the number
	// of CPUs. Each binary is one process, started once to describe it and
	// reused across the host majors.
	Parallelism int
	// Timeout bounds one binary's start and all its cells; 0 means 2
	// minutes.
	Timeout time.Duration
	// Logger receives the plugins' logs; nil discards them.
	Logger *slog.Logger
	// Guests runs the WebAssembly plugins in the directory (.wasm
	// modules): a runtime for modules, such as a wasmhost.Runtime, whose
	// Config says what they may use; the caller closes it. Nil fails a
	// module's cells at "start", saying so; native binaries need none.
	Guests host.GuestRunner
	// Scratch is the host directory in which the suites make the
	// directories they hand the plugins (TempDir), such as an object
	// store's: grant it to Guests, writable, at GuestScratch, and the
	// modules are handed paths under GuestScratch, the binaries paths in
	// it as they are. Empty means os.TempDir(), and then a suite's
	// TempDir fails for a module, saying to set it. The caller makes and
	// removes it.
	Scratch string

	// newManager makes each binary's manager (given the Finder of its
	// source): manager.New when nil. Tests set it to watch the managers
	// (export_test.go).
	newManager func(*manager.Finder, manager.Config) *manager.Manager
}

// Run tests every executable file and WebAssembly module (.wasm, run
// inside this process by Guests) in dir against every host major. It
// builds nothing. Cells are sorted by plugin, version, binary and host
// major (highest first). The error is for a dir that cannot be read, or
// holds no plugin of the kind.
func (mx Matrix) Run(ctx context.Context, dir string) ([]Cell, error) {
	if len(mx.Hosts) == 0 {
		return nil, errors.New("conformance: Matrix.Hosts is empty: add one HostMajor per host major to test")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("conformance: reading the plugin directory: %w", err)
	}
	var bins []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p, err := filepath.Abs(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		// os.Stat follows links: a directory of links to builds works.
		// Windows has no execute bits: there every regular file counts.
		// A WebAssembly module (.wasm) need not be executable.
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && (osdep.Executable(fi.Mode()) || hostwire.IsWasm(p)) {
			bins = append(bins, p)
		}
	}
	if len(bins) == 0 {
		return nil, fmt.Errorf("conformance: no executable files or WebAssembly modules in %s: build the plugin releases to test into it", dir)
	}
	par := mx.Parallelism
	if par <= 0 {
		par = runtime.NumCPU()
	}
	results := make([][]Cell, len(bins))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, bin := range bins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				results[i] = mx.failAll(filepath.Base(bin), "", bin, "start", ctx.Err())
				return
			}
			results[i] = mx.binary(ctx, bin)
		}()
	}
	wg.Wait()
	var cells []Cell
	for _, r := range results {
		cells = append(cells, r...)
	}
	if len(cells) == 0 {
		return nil, fmt.Errorf("conformance: no binary in %s implements kind %q", dir, mx.Kind)
	}
	sort.SliceStable(cells, func(i, j int) bool {
		a, b := cells[i], cells[j]
		switch {
		case a.Plugin != b.Plugin:
			return a.Plugin < b.Plugin
		case a.Version != b.Version:
			return a.Version < b.Version
		case a.Binary != b.Binary:
			return a.Binary < b.Binary
		}
		return a.HostMajor > b.HostMajor
	})
	return cells, nil
}

// binary runs every host major's suite for each of the binary's
// implementations of the kind, dispensed through a manager of its own:
// the binary is started once, described once, and its one process serves
// every host major. A binary that cannot be started or described fails
// every cell at "start".
func (mx Matrix) binary(ctx context.Context, bin string) []Cell {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(mx.Timeout, 2*time.Minute))
	defer cancel()
	logger := mx.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	module := hostwire.IsWasm(bin)
	if mx.Guests == nil && module {
		return mx.failAll(filepath.Base(bin), "", bin, "start", errors.New("a WebAssembly module, and Matrix.Guests is nil: set it to a runtime for modules (wasmhost.New), or take the module out of the directory"))
	}
	newManager := mx.newManager
	if newManager == nil {
		newManager = func(_ *manager.Finder, cfg manager.Config) *manager.Manager { return manager.New(cfg) }
	}
	finder := &manager.Finder{
		Launch: host.Command{Cookie: mx.Cookie},
		Host:   host.Options{Logger: logger},
		Guests: mx.Guests,
		// The process that answers Describe serves the suites.
		KeepDescribed: true,
	}
	m := newManager(finder, manager.Config{
		Sources:  []manager.Source{finder.Files(bin)},
		Logger:   logger,
		Releases: mx.Releases,
	})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		return mx.failAll(filepath.Base(bin), "", bin, "start", err)
	}
	b := m.Entries()[0] // Files(bin) lists bin alone
	if b.Err != nil {
		return mx.failAll(filepath.Base(bin), "", bin, "start", b.Err)
	}
	ctx = mx.withScratch(ctx, bin, module)
	var cells []Cell
	for _, name := range mx.names(b.Description) {
		im, err := m.Lookup(mx.Kind, name)
		if err != nil {
			cells = append(cells, mx.failAll(name, b.Description.GetPluginVersion(), bin, "lookup", err)...)
			continue
		}
		for _, h := range mx.Hosts {
			cells = append(cells, mx.cell(ctx, m, h, im, bin))
		}
	}
	return cells
}

// names lists the binary's implementations of the kind.
func (mx Matrix) names(d *catalogv1.DescribeResponse) []string {
	seen := map[string]bool{}
	var names []string
	for _, k := range d.GetKinds() {
		if k.GetName() != mx.Kind {
			continue
		}
		for _, maj := range k.GetMajors() {
			for _, n := range maj.GetNames() {
				if !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

func (mx Matrix) cell(ctx context.Context, m *manager.Manager, h Host, im manager.Implementation, bin string) Cell {
	cell := Cell{Plugin: im.Name, Version: im.PluginVersion, Binary: bin, HostMajor: h.Major}
	var via Mode
	for _, hm := range h.majors {
		for _, pm := range im.Majors {
			if int(pm.GetMajor()) == hm && via == "" {
				via = ModeAdapter
				if hm == h.Major {
					via = ModeDirect
				}
			}
		}
	}
	rep, err := h.run(ctx, m, im.Name)
	var ie *manager.IncompatibleError
	switch {
	case errors.As(err, &ie):
		cell.Mode = ModeIncompatible
		cell.Advice = ie.Advice
		if cell.Advice == "" {
			cell.Advice = ie.Error()
		}
		return cell
	case err != nil:
		cell.Mode, cell.Via = ModeFailing, via
		cell.Failed = 1
		cell.Failures = []Failure{{Case: "dispense", Error: err.Error()}}
		return cell
	}
	cell.Passed, cell.Failed, cell.Failures = rep.Passed, len(rep.Failures), rep.Failures
	cell.Mode = via
	if !rep.OK() {
		cell.Mode, cell.Via = ModeFailing, via
	}
	return cell
}

// failAll is one failing cell per host major for a binary that failed
// before any suite could run.
func (mx Matrix) failAll(plugin, version, bin, step string, err error) []Cell {
	var cells []Cell
	for _, h := range mx.Hosts {
		cells = append(cells, Cell{Plugin: plugin, Version: version, Binary: bin, HostMajor: h.Major, Mode: ModeFailing,
			Failed: 1, Failures: []Failure{{Case: step, Error: err.Error()}}})
	}
	return cells
}

// Failing reports whether any cell is failing: the matrix's exit status.
// Incompatible cells are information, not failures.
func Failing(cells []Cell) bool {
	for _, c := range cells {
		if c.Mode == ModeFailing {
			return true
		}
	}
	return false
}
