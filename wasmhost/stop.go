package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero/api"
)

// Stopping a guest that computes (issue 42, row 5). wazero stops compiled
// code through WithCloseOnContextDone, which makes every loop header of
// the guest leave the machine code for a Go function that checks whether
// the module was closed. A Go guest enters a loop at every function call
// (each function of Go's wasm port is a loop around its resumption
// points), so that check cost a unary call half of its time.
//
// The Runtime does the same check inside the guest instead: before it
// compiles a module, addStopChecks gives it one more global, a mutable
// i32 exported as stopExport and 0 at start, and at the head of every
// loop, where wazero put its check, the instructions
//
//	global.get $stop
//	if
//	  unreachable
//	end
//
// a load and a branch in machine code. Stop sets the global to 1: the
// guest traps at its next loop header (any code that runs on must pass
// one, or end). The guest cannot clear it: a module whose code sets a
// global it does not declare is refused, as wazero refuses it.

// stopExport is the name under which a guest's stop global is exported.
const stopExport = "plugkit.stop"

// stopCheck is the check inserted at the head of every loop, for the
// global at index idx.
func stopCheck(idx uint32) []byte {
	check := append([]byte{0x23}, appendULEB(nil, uint64(idx))...) // global.get
	return append(check, 0x04, 0x40, 0x00, 0x0b)                   // if (no result) unreachable end
}

// stopGlobalEntry is the stop global's declaration: i32, mutable,
// initialised by i32.const 0.
var stopGlobalEntry = []byte{0x7f, 0x01, 0x41, 0x00, 0x0b}

// sectionOrder ranks the sections that are not custom in the order the
// binary format requires.
var sectionOrder = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

// errSetsStopGlobal reports a module whose code sets a global past its
// own: after addStopChecks that would be the stop global.
var errSetsStopGlobal = errors.New("wasmhost: the module's code sets a global it does not declare; wazero would refuse it: rebuild it with a WebAssembly compiler")

// addStopChecks returns module with its stop global and the check at
// each loop's head (see above); s is what validate found in module.
func addStopChecks(module []byte, s codeShape) ([]byte, error) {
	if s.globalSets > uint64(s.globals) {
		return nil, errSetsStopGlobal
	}
	check := stopCheck(s.globals)
	out := make([]byte, 0, len(module)+len(s.loops)*len(check)+64)
	out = append(out, module[:8]...)
	addedGlobal, addedExport := false, false
	// addMissing adds the global and export sections where the module has
	// none, before a section that must follow them (rank).
	addMissing := func(rank int) {
		if !addedGlobal && rank > sectionOrder[6] {
			out = appendSection(out, 6, appendULEB(nil, 1), stopGlobalEntry)
			addedGlobal = true
		}
		if !addedExport && rank > sectionOrder[7] {
			out = appendSection(out, 7, appendULEB(nil, 1), exportEntry(s.globals))
			addedExport = true
		}
	}
	loops := s.loops
	for _, sec := range s.sections {
		if sec.id != 0 {
			addMissing(sectionOrder[sec.id])
		}
		body := module[sec.body:sec.end]
		switch sec.id {
		case 6:
			out = appendCounted(out, 6, body, stopGlobalEntry)
			addedGlobal = true
		case 7:
			out = appendCounted(out, 7, body, exportEntry(s.globals))
			addedExport = true
		case 10:
			var err error
			if out, loops, err = addChecksToCode(out, module, sec, loops, check); err != nil {
				return nil, err
			}
		default:
			out = append(out, module[sec.start:sec.end]...)
		}
	}
	addMissing(len(sectionOrder) + 1)
	return out, nil
}

// exportEntry exports the global idx as stopExport.
func exportEntry(idx uint32) []byte {
	e := appendULEB(nil, uint64(len(stopExport)))
	e = append(e, stopExport...)
	e = append(e, 0x03) // a global
	return appendULEB(e, uint64(idx))
}

// appendCounted appends section id, whose content is body (a vector),
// with one more item, item, at its end.
func appendCounted(out []byte, id byte, body, item []byte) []byte {
	r := reader{b: body}
	n := r.u32()
	return appendSection(out, id, appendULEB(nil, uint64(n)+1), body[r.pos:], item)
}

// addChecksToCode appends the code section sec of module with check
// after each of loops that falls in it, and returns the loops past it.
// It reads the functions' sizes twice, to write the section's size
// first, so that the code is copied once.
func addChecksToCode(out, module []byte, sec sectionSpan, loops []int, check []byte) ([]byte, []int, error) {
	type function struct{ start, end, loops int }
	r := reader{b: module[:sec.end], pos: sec.body}
	n := r.u32()
	funcs := make([]function, 0, n)
	size := len(appendULEB(nil, uint64(n)))
	k := 0
	for range n {
		body := int(r.u32())
		f := function{start: r.pos, end: r.pos + body}
		if r.err != nil || f.end > sec.end {
			return nil, nil, fmt.Errorf("%w (in the code section)", errTruncated(r.err))
		}
		for k < len(loops) && loops[k] < f.end {
			k++
			f.loops++
		}
		body += f.loops * len(check)
		size += len(appendULEB(nil, uint64(body))) + body
		funcs = append(funcs, f)
		r.pos = f.end
	}
	out = appendULEB(append(out, 10), uint64(size))
	out = appendULEB(out, uint64(n))
	for _, f := range funcs {
		out = appendULEB(out, uint64(f.end-f.start+f.loops*len(check)))
		at := f.start
		for _, l := range loops[:f.loops] {
			out = append(out, module[at:l]...)
			out = append(out, check...)
			at = l
		}
		out = append(out, module[at:f.end]...)
		loops = loops[f.loops:]
	}
	return out, loops, nil
}

// appendSection appends a section: its id, its size and parts.
func appendSection(out []byte, id byte, parts ...[]byte) []byte {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	out = appendULEB(append(out, id), uint64(size))
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// appendULEB appends n in unsigned LEB128.
func appendULEB(b []byte, n uint64) []byte {
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// stopSwitch is a guest's stop global, once it is instantiated: Stop
// sets it, then or as soon as it is known.
type stopSwitch struct {
	mu      sync.Mutex
	global  api.MutableGlobal
	stopped bool
}

// arm finds mod's stop global; a Stop that came first sets it at once.
func (s *stopSwitch) arm(mod api.Module) error {
	g, ok := mod.ExportedGlobal(stopExport).(api.MutableGlobal)
	if !ok {
		return fmt.Errorf("wasmhost: the guest has no %s global; compile it with this Runtime", stopExport)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.global = g
	if s.stopped {
		g.Set(1)
	}
	return nil
}

// stop makes the guest trap at its next loop header.
func (s *stopSwitch) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped && s.global != nil {
		s.global.Set(1)
	}
	s.stopped = true
}

// runStart runs mod's _start, as instantiating it with its start
// function would have.
func runStart(ctx context.Context, mod api.Module) error {
	start := mod.ExportedFunction("_start")
	if start == nil {
		return nil
	}
	_, err := start.Call(ctx)
	return err
}
