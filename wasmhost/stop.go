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
// compiles a module, addStopChecks gives it two more globals, mutable
// i32s: $tick, tickPeriod at start, and $stop, exported as stopExport
// and 0 at start; and at the head of every loop, where wazero put its
// check, the instructions
//
//	global.get $tick
//	i32.const 1
//	i32.sub
//	global.set $tick
//	global.get $tick
//	i32.eqz
//	if
//	  i32.const tickPeriod
//	  global.set $tick
//	  global.get $stop
//	  if
//	    unreachable
//	  end
//	  i32.const 0
//	  memory.grow
//	  drop
//	end
//
// a count down and a branch in machine code, and once every tickPeriod
// loop headers, the rest. Stop sets $stop to 1: the guest traps within
// tickPeriod loop headers (any code that runs on must pass one, or end).
// The guest cannot clear it: a module whose code sets a global it does
// not declare is refused, as wazero refuses it.
//
// The memory.grow by 0 pages, which changes nothing, is how the guest
// lets Go's scheduler in: wazero runs it in Go, out of the machine code.
// Go cannot stop a goroutine inside machine code it did not compile, and
// its garbage collector stops every goroutine (stop the world) at times:
// a guest that computed without ever leaving the machine code held the
// whole process still (every goroutine stopped, the one that would Stop
// the guest among them) for as long as it computed: forever, for one
// that spins (TestSpinningGuestLetsGCRun). A module without a memory is
// given one of no pages for it.

// stopExport is the name under which a guest's stop global is exported.
const stopExport = "plugkit.stop"

// tickPeriod is how many loop headers a guest passes between two
// leaves of its machine code (a fraction of a millisecond of a loop that
// spins): how long Go's garbage collector may wait for it to stop, and
// a Stop for it to end.
const tickPeriod = 1 << 16

// stopCheck is the check inserted at the head of every loop, for the
// globals $tick at index tick and $stop after it.
func stopCheck(tick uint32) []byte {
	getTick := appendULEB([]byte{0x23}, uint64(tick)) // global.get
	setTick := appendULEB([]byte{0x24}, uint64(tick)) // global.set
	b := append(getTick, 0x41, 0x01, 0x6b)            // i32.const 1, i32.sub
	b = append(b, setTick...)
	b = append(b, getTick...)
	b = append(b, 0x45, 0x04, 0x40) // i32.eqz, if (no result)
	b = append(b, 0x41)             // i32.const
	b = appendSLEB(b, tickPeriod)
	b = append(b, setTick...)
	b = appendULEB(append(b, 0x23), uint64(tick)+1) // global.get $stop
	b = append(b, 0x04, 0x40, 0x00, 0x0b)           // if (no result) unreachable end
	b = append(b, 0x41, 0x00, 0x40, 0x00, 0x1a)     // i32.const 0, memory.grow 0, drop
	return append(b, 0x0b)                          // end
}

// appendSLEB appends n in signed LEB128.
func appendSLEB(b []byte, n int64) []byte {
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if (n == 0 && c&0x40 == 0) || (n == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// stopGlobalEntries declare $tick and $stop: i32, mutable, initialised
// by i32.const tickPeriod and 0.
var stopGlobalEntries = append(append(append([]byte{0x7f, 0x01, 0x41}, appendSLEB(nil, tickPeriod)...), 0x0b), 0x7f, 0x01, 0x41, 0x00, 0x0b)

// noPagesMemory declares a memory of no pages, at most none.
var noPagesMemory = []byte{0x01, 0x00, 0x00}

// sectionOrder ranks the sections that are not custom in the order the
// binary format requires.
var sectionOrder = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

// errSetsStopGlobal reports a module whose code sets a global past its
// own: after addStopChecks that would be the stop global.
var errSetsStopGlobal = errors.New("wasmhost: the module's code sets a global it does not declare; wazero would refuse it: rebuild it with a WebAssembly compiler")

// withStopChecks is module with its stop checks (addStopChecks) when r
// compiles guests; the interpreter checks its context itself, out of the
// guest's code (and is Go code, which Go's scheduler stops), so an
// interpreted module goes as it is: its compile, slow already, does not
// translate the checks too.
func (r *Runtime) withStopChecks(module []byte, s codeShape) ([]byte, error) {
	if r.cfg.Interpret {
		return module, nil
	}
	return addStopChecks(module, s)
}

// addStopChecks returns module with its stop global and the check at
// each loop's head (see above); s is what validate found in module.
func addStopChecks(module []byte, s codeShape) ([]byte, error) {
	if s.globalSets > uint64(s.globals) {
		return nil, errSetsStopGlobal
	}
	if s.memories > 1 {
		return nil, errMalformed // wazero runs one memory at most
	}
	check := stopCheck(s.globals)
	out := make([]byte, 0, len(module)+len(s.loops)*len(check)+64)
	out = append(out, module[:8]...)
	addedMemory, addedGlobal, addedExport := s.memories > 0, false, false
	// addMissing adds the memory, global and export sections where the
	// module has none, before a section that must follow them (rank).
	addMissing := func(rank int) {
		if !addedMemory && rank > sectionOrder[5] {
			out = appendSection(out, 5, appendULEB(nil, 1), noPagesMemory)
			addedMemory = true
		}
		if !addedGlobal && rank > sectionOrder[6] {
			out = appendSection(out, 6, appendULEB(nil, 2), stopGlobalEntries)
			addedGlobal = true
		}
		if !addedExport && rank > sectionOrder[7] {
			out = appendSection(out, 7, appendULEB(nil, 1), exportEntry(s.globals+1))
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
			out = appendCounted(out, 6, body, 2, stopGlobalEntries)
			addedGlobal = true
		case 7:
			out = appendCounted(out, 7, body, 1, exportEntry(s.globals+1))
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
// with more items, items (count of them), at its end.
func appendCounted(out []byte, id byte, body []byte, count uint64, items []byte) []byte {
	r := reader{b: body}
	n := r.u32()
	return appendSection(out, id, appendULEB(nil, uint64(n)+count), body[r.pos:], items)
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
