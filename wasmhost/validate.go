package wasmhost

import (
	"errors"
	"fmt"
)

// This file checks a module's binary before wazero decodes or compiles
// it (issue 36, point 9): wazero v1.12.0 allocates what a module's counts
// say before it reads the items (4 billion locals are 4 GB, a vector's
// count a slice of that length), and its compile time grows faster than
// linearly with the blocks of one function. The check reads every
// section wazero reads, without allocating per item, and refuses a
// module past Limits with an error that names the limit.

// Limits bound what a module may declare; they are checked before it is
// compiled (a module past one is refused, nothing of it allocated). The
// zero value takes the defaults, which a Go wasip1 module of 30 MB is
// well inside.
type Limits struct {
	// ModuleSize bounds a module's size in bytes; 0 means
	// DefaultModuleSize.
	ModuleSize int64
	// Functions bounds the functions a module defines; 0 means
	// DefaultFunctions.
	Functions int
	// FunctionSize bounds one function's code in bytes; 0 means
	// DefaultFunctionSize.
	FunctionSize int
	// Locals bounds one function's locals; 0 means DefaultLocals.
	Locals int
	// Blocks bounds one function's blocks (block, loop, if, try): its
	// compile takes a time that grows faster than their number, and
	// their nesting is at most their number; 0 means DefaultBlocks.
	Blocks int
}

// The default Limits. A Go wasip1 module (the objectstore example's
// memory plugin, 31 MB) has 19,230 functions, at most 984 blocks and 20
// locals in one, and its largest function is 51 KB. One function of
// 4,000 blocks compiles in about 0.3 s (20,000 took 12 s); a million
// empty functions in 21 s.
const (
	DefaultModuleSize   = 128 << 20
	DefaultFunctions    = 100_000
	DefaultFunctionSize = 1 << 20
	DefaultLocals       = 50_000
	DefaultBlocks       = 4_000
)

// Fixed bounds, beyond any module a compiler writes (and close to
// wasmparser's, which wasmtime uses), on what wazero allocates for the
// other sections before reading them.
const (
	maxTypes        = 100_000
	maxParams       = 1_000
	maxImports      = 100_000
	maxExports      = 100_000
	maxGlobals      = 100_000
	maxTables       = 100
	maxSegments     = 100_000
	maxElements     = 10_000_000
	maxNameLen      = 100_000
	tableEntryBytes = 8 // a table entry's size in the host (wazero: a uintptr)
)

// LimitError reports a module past one of Limits, or one whose tables
// and memory would need more than Config.MemoryLimit.
type LimitError struct {
	// What is the limit, in words ("locals in one function").
	What string
	// Have is what the module declares; Limit what is allowed.
	Have, Limit uint64
	// Field is the Config field that sets the limit.
	Field string
}

// Error says what the module declares and what to do.
func (e *LimitError) Error() string {
	return fmt.Sprintf("wasmhost: the module declares %d %s, over the limit of %d (wasmhost.Config.%s): a module this large is refused before it is compiled; raise the limit only for a module you trust", e.Have, e.What, e.Limit, e.Field)
}

// withDefaults is l with each zero field set to its default.
func (l Limits) withDefaults() Limits {
	if l.ModuleSize <= 0 {
		l.ModuleSize = DefaultModuleSize
	}
	if l.Functions <= 0 {
		l.Functions = DefaultFunctions
	}
	if l.FunctionSize <= 0 {
		l.FunctionSize = DefaultFunctionSize
	}
	if l.Locals <= 0 {
		l.Locals = DefaultLocals
	}
	if l.Blocks <= 0 {
		l.Blocks = DefaultBlocks
	}
	return l
}

// moduleShape is what validate learns of a module.
type moduleShape struct {
	functions   int    // defined functions
	maxLocals   uint64 // locals of the function with the most
	maxBlocks   int    // blocks of the function with the most
	maxBody     int    // size of the largest function's code
	tableBytes  uint64 // the host memory its tables may reach
	memoryBytes uint64 // its memory's declared minimum
	code        codeShape
}

// codeShape is where validate found what addStopChecks changes: the
// sections, the loops, the globals and the highest global the code sets.
type codeShape struct {
	sections   []sectionSpan
	loops      []int  // offsets in the module just after each loop's block type, ascending
	globals    uint32 // imported and defined
	globalSets uint64 // 1 + the highest global index a global.set names; 0: none
	memories   uint32 // imported and defined
}

// sectionSpan is one section of a module: its id at start, its content
// from body to end.
type sectionSpan struct {
	id               byte
	start, body, end int
}

// errMalformed is a module validate cannot read; wazero would refuse it
// too, with its own words.
var errMalformed = errors.New("wasmhost: the module is malformed")

// validate checks module (which starts with the magic and version)
// against l and memoryLimit, before any of it is compiled.
func validate(module []byte, l Limits, memoryLimit int64) (moduleShape, error) {
	var s moduleShape
	if int64(len(module)) > l.ModuleSize {
		return s, &LimitError{What: "bytes (its size)", Have: uint64(len(module)), Limit: uint64(l.ModuleSize), Field: "Limits.ModuleSize"}
	}
	if len(module) < 8 {
		return s, errMalformed
	}
	r := reader{b: module, pos: 8}
	var tables []tableLimits
	grows := false // the code has a table.grow
	for !r.done() {
		start, id, body := r.section()
		if r.err != nil {
			return s, r.fail("a section")
		}
		s.code.sections = append(s.code.sections, sectionSpan{id: id, start: start, body: r.pos - len(body), end: r.pos})
		sr := reader{b: body, base: r.pos - len(body)}
		var err error
		switch id {
		case 0:
			err = validateCustom(&sr)
		case 1:
			err = eachItem(&sr, maxTypes, "types", func(r *reader) {
				r.byte()      // 0x60, a function type
				for range 2 { // parameters, results
					n := r.u32()
					if n > maxParams {
						r.err = fmt.Errorf("%w: a type of %d parameters or results", errMalformed, n)
					}
					for i := uint32(0); i < n && r.err == nil; i++ {
						r.valType()
					}
				}
			})
		case 2:
			err = eachItem(&sr, maxImports, "imports", func(r *reader) {
				r.name()
				r.name()
				switch r.byte() {
				case 0: // function: its type
					r.u32()
				case 4: // tag: its attribute and type
					r.byte()
					r.u32()
				case 1: // table
					r.valType()
					tables = append(tables, r.tableLimits())
				case 2: // memory
					r.limits()
					s.code.memories++
				case 3: // global
					r.valType()
					r.byte()
					s.code.globals++
				default:
					r.err = errMalformed
				}
			})
		case 3:
			var n uint32
			n, err = countItems(&sr, l.Functions, "functions", "Limits.Functions")
			if err == nil {
				for range n {
					sr.u32()
				}
				s.functions = int(n)
			}
		case 4:
			err = eachItem(&sr, maxTables, "tables", func(r *reader) {
				r.valType()
				tables = append(tables, r.tableLimits())
			})
		case 5:
			err = eachItem(&sr, 1, "memories", func(r *reader) {
				minPages, _, _ := r.limits()
				s.memoryBytes = minPages * pageSize
				s.code.memories++
			})
		case 6:
			err = eachItem(&sr, maxGlobals, "globals", func(r *reader) {
				s.code.globals++
				r.valType()
				r.byte()
				r.constExpr()
			})
		case 7:
			err = eachItem(&sr, maxExports, "exports", func(r *reader) {
				r.name()
				r.byte()
				r.u32()
			})
		case 8:
			sr.u32()
		case 9:
			var elements uint64
			err = eachItem(&sr, maxSegments, "element segments", func(r *reader) {
				elements += r.elementSegment()
				if elements > maxElements {
					r.err = &LimitError{What: "table elements in its segments", Have: elements, Limit: maxElements, Field: "MemoryLimit"}
				}
			})
		case 10:
			err = validateCode(&sr, l, &s)
			grows = sr.tableGrow
			s.code.loops, s.code.globalSets = sr.loops, sr.globalSets
		case 11:
			err = eachItem(&sr, maxSegments, "data segments", func(r *reader) {
				switch r.u32() {
				case 0:
					r.constExpr()
				case 2:
					r.u32()
					r.constExpr()
				}
				r.bytes(int(r.u32()))
			})
		case 12:
			sr.u32()
		case 13:
			err = eachItem(&sr, maxTypes, "tags", func(r *reader) {
				r.byte()
				r.u32()
			})
		default:
			err = fmt.Errorf("%w: unknown section %d", errMalformed, id)
		}
		if err == nil && sr.err != nil {
			err = sr.err
		}
		if err != nil {
			return s, err
		}
	}
	for _, t := range tables {
		s.tableBytes += t.entries(grows) * tableEntryBytes
	}
	if need := s.tableBytes + s.memoryBytes; need > uint64(memoryLimit) {
		return s, &LimitError{What: "bytes of tables (8 per entry; a table that table.grow may grow counts at its maximum, and without one at 2^32-1 entries) and memory (at its minimum)", Have: need, Limit: uint64(memoryLimit), Field: "MemoryLimit"}
	}
	return s, nil
}

// tableLimits are a table's declared limits.
type tableLimits struct {
	minimum, maximum uint64
	hasMax           bool
}

// entries is the most entries the table may reach: its minimum when
// nothing grows it (a module without table.grow: a Go module's table
// has no maximum, and never grows), else its maximum, or, with none
// declared, what table.grow allows (2^32-1).
func (t tableLimits) entries(grows bool) uint64 {
	switch {
	case !grows:
		return t.minimum
	case t.hasMax:
		return t.maximum
	default:
		return 1<<32 - 1
	}
}

// eachItem reads a vector of at most limit items, each by item.
func eachItem(r *reader, limit int, what string, item func(*reader)) error {
	n, err := countItems(r, limit, what, "")
	if err != nil {
		return err
	}
	for range n {
		item(r)
		if r.err != nil {
			return r.fail(what)
		}
	}
	return nil
}

// countItems reads a vector's count, which must be at most limit and at
// most the bytes left (each item takes at least one).
func countItems(r *reader, limit int, what, field string) (uint32, error) {
	n := r.u32()
	if r.err != nil {
		return 0, r.fail(what)
	}
	if uint64(n) > uint64(limit) {
		if field == "" {
			return 0, fmt.Errorf("wasmhost: the module declares %d %s, more than %d, which no compiler writes: it is refused before it is compiled", n, what, limit)
		}
		return 0, &LimitError{What: what, Have: uint64(n), Limit: uint64(limit), Field: field}
	}
	if int(n) > len(r.b)-r.pos {
		return 0, fmt.Errorf("%w: %d %s in %d bytes", errMalformed, n, what, len(r.b)-r.pos)
	}
	return n, nil
}

// validateCustom checks the name section, whose counts wazero allocates
// by; other custom sections it skips.
func validateCustom(r *reader) error {
	if r.name() != "name" || r.err != nil {
		return nil
	}
	for !r.done() && r.err == nil {
		sub := r.byte()
		sr := reader{b: r.bytes(int(r.u32()))}
		if r.err != nil || sub == 0 {
			continue // the module's name
		}
		if sub != 1 && sub != 2 {
			continue // wazero skips the others
		}
		n, err := countItems(&sr, len(sr.b), "names", "")
		if err != nil {
			return err
		}
		for range n {
			sr.u32()
			if sub == 1 {
				sr.name()
				continue
			}
			m, err := countItems(&sr, len(sr.b), "local names", "")
			if err != nil {
				return err
			}
			for range m {
				sr.u32()
				sr.name()
			}
		}
		if sr.err != nil {
			return sr.fail("the name section")
		}
	}
	return r.err
}

// validateCode checks each function's size, locals and blocks.
func validateCode(r *reader, l Limits, s *moduleShape) error {
	n, err := countItems(r, l.Functions, "functions", "Limits.Functions")
	if err != nil {
		return err
	}
	for i := range n {
		size := r.u32()
		if r.err == nil && uint64(size) > uint64(l.FunctionSize) {
			return &LimitError{What: fmt.Sprintf("bytes of code in function %d", i), Have: uint64(size), Limit: uint64(l.FunctionSize), Field: "Limits.FunctionSize"}
		}
		fr := reader{b: r.bytes(int(size)), base: r.base + r.pos - int(size), loops: r.loops, globalSets: r.globalSets}
		if r.err != nil {
			return r.fail("the code section")
		}
		s.maxBody = max(s.maxBody, int(size))
		decls := fr.u32()
		if uint64(decls) > uint64(len(fr.b)) {
			return fmt.Errorf("%w: %d local declarations in function %d's %d bytes", errMalformed, decls, i, size)
		}
		var locals uint64
		for range decls {
			locals += uint64(fr.u32())
			fr.valType()
			if locals > uint64(l.Locals) {
				return &LimitError{What: fmt.Sprintf("locals in function %d", i), Have: locals, Limit: uint64(l.Locals), Field: "Limits.Locals"}
			}
		}
		s.maxLocals = max(s.maxLocals, locals)
		blocks, err := countBlocks(&fr, l.Blocks)
		r.tableGrow = r.tableGrow || fr.tableGrow
		r.loops, r.globalSets = fr.loops, fr.globalSets
		if err != nil {
			return fmt.Errorf("function %d: %w", i, err)
		}
		s.maxBlocks = max(s.maxBlocks, blocks)
	}
	return nil
}

// countBlocks reads a function's instructions to their end and counts
// its blocks; past limit it stops with a *LimitError. It notes in r
// where each loop's body begins and the highest global set (for
// addStopChecks). The instructions
// of most of a compiler's code (no immediate, or one or two numbers) are
// read inline: a 30 MB module is read in a few tens of milliseconds.
func countBlocks(r *reader, limit int) (int, error) {
	blocks := 0
	b, pos := r.b, r.pos // locals in the loop: it reads every byte of the code
	for pos < len(b) {
		op := b[pos]
		pos++
		switch {
		case op >= 0x45 && op <= 0xc4, op == 0x0b, op == 0x1a, op == 0x1b, op == 0x0f:
			// no immediate
		case op >= 0x20 && op <= 0x23, op == 0x0c, op == 0x0d, op == 0x10, op == 0x41, op == 0x42:
			pos = skipLEB(b, pos)
		case op == 0x24: // global.set: which global
			r.pos = pos
			g := r.u32()
			if r.err != nil {
				return blocks, r.fail("the code")
			}
			r.globalSets = max(r.globalSets, uint64(g)+1)
			pos = r.pos
		case op >= 0x28 && op <= 0x3e:
			if pos < len(b) && b[pos]&0x40 != 0 {
				pos = skipLEB(b, pos) // a memory index follows the alignment
			}
			pos = skipLEB(b, skipLEB(b, pos))
		default:
			r.pos = pos
			if op == 0x02 || op == 0x03 || op == 0x04 || op == 0x06 || op == 0x1f { // block, loop, if, try, try_table
				blocks++
				if blocks > limit {
					return blocks, &LimitError{What: "blocks in one function", Have: uint64(blocks), Limit: uint64(limit), Field: "Limits.Blocks"}
				}
				r.blockType()
				if op == 0x03 {
					r.loops = append(r.loops, r.base+r.pos)
				}
				if op == 0x1f {
					for range r.u32() {
						if kind := r.byte(); kind < 2 {
							r.u32()
						}
						r.u32()
					}
				}
			} else {
				r.immediates(op)
			}
			if r.err != nil {
				return blocks, r.fail("the code")
			}
			pos = r.pos
		}
	}
	if pos > len(b) {
		r.err = errTruncated(r.err)
		return blocks, r.fail("the code")
	}
	r.pos = pos
	return blocks, nil
}

// skipLEB is the position after the LEB128 number at pos (wazero checks
// its length when it decodes the code); past len(b) when it is cut.
func skipLEB(b []byte, pos int) int {
	for pos < len(b) && b[pos]&0x80 != 0 {
		pos++
	}
	return pos + 1
}

// immediates skips the immediates of the instruction op, which r has
// just read.
func (r *reader) immediates(op byte) {
	switch {
	case op <= 0x01, op == 0x05, op == 0x0a, op == 0x0b, op == 0x0f, op == 0x19, op == 0x1a, op == 0x1b,
		op >= 0x45 && op <= 0xc4, op == 0xd1, op == 0xd3, op == 0xd5:
		// no immediate
	case op == 0x07, op == 0x08, op == 0x09, op == 0x0c, op == 0x0d, op == 0x10, op == 0x12, op == 0x14, op == 0x15,
		op == 0x18, op >= 0x20 && op <= 0x26, op == 0x3f, op == 0x40, op == 0xd2, op == 0xd4, op == 0xd6:
		r.u32() // an index or a label
	case op == 0x0e: // br_table
		for range r.u32() {
			r.u32()
			if r.err != nil {
				return
			}
		}
		r.u32()
	case op == 0x11, op == 0x13: // call_indirect: type, table
		r.u32()
		r.u32()
	case op == 0x1c: // select with types
		for range r.u32() {
			r.valType()
			if r.err != nil {
				return
			}
		}
	case op >= 0x28 && op <= 0x3e:
		r.memarg()
	case op == 0x41, op == 0x42:
		r.leb(10)
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op == 0xd0:
		r.heapType()
	case op == 0xfc:
		r.prefixFC(r.u32())
	case op == 0xfd:
		r.prefixFD(r.u32())
	case op == 0xfe:
		if sub := r.u32(); sub == 0x03 {
			r.byte() // atomic.fence
		} else {
			r.memarg()
		}
	default:
		r.err = fmt.Errorf("%w: unknown opcode 0x%02x", errMalformed, op)
	}
}

// prefixFC skips the immediates of the 0xfc instruction sub.
func (r *reader) prefixFC(sub uint32) {
	switch {
	case sub <= 7: // saturating truncations
	case sub == 8, sub == 10, sub == 12, sub == 14: // two indexes
		r.u32()
		r.u32()
	case sub <= 17:
		r.u32()
		r.tableGrow = r.tableGrow || sub == 15
	default:
		r.err = fmt.Errorf("%w: unknown opcode 0xfc %d", errMalformed, sub)
	}
}

// prefixFD skips the immediates of the SIMD instruction sub.
func (r *reader) prefixFD(sub uint32) {
	switch {
	case sub <= 0x0b, sub == 0x5c, sub == 0x5d: // loads and stores
		r.memarg()
	case sub == 0x0c, sub == 0x0d: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 0x15 && sub <= 0x22: // lane extracts and replaces
		r.byte()
	case sub >= 0x54 && sub <= 0x5b: // lane loads and stores
		r.memarg()
		r.byte()
	}
}

// reader reads a module's bytes; the first error sticks, and every read
// after it returns zero.
type reader struct {
	b          []byte
	pos        int
	err        error
	base       int    // b's offset in the module
	tableGrow  bool   // a table.grow was read
	loops      []int  // offsets in the module after each loop's block type read (countBlocks)
	globalSets uint64 // 1 + the highest global a global.set read names (countBlocks)
}

func (r *reader) done() bool { return r.pos >= len(r.b) || r.err != nil }

// section reads a section of a module: its id and body, and the offset
// of its first byte. r.err says whether the module held it whole.
func (r *reader) section() (start int, id byte, body []byte) {
	start = r.pos
	id = r.byte()
	return start, id, r.bytes(int(r.u32()))
}

// fail is r's error, said to be in what when the module is malformed.
func (r *reader) fail(what string) error {
	if r.err == nil || errors.Is(r.err, errMalformed) {
		return fmt.Errorf("%w (in %s)", errTruncated(r.err), what)
	}
	return r.err
}

func (r *reader) byte() byte {
	if r.err != nil || r.pos >= len(r.b) {
		r.err = errTruncated(r.err)
		return 0
	}
	r.pos++
	return r.b[r.pos-1]
}

// errTruncated is err, or, if none, the end of the bytes.
func errTruncated(err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: it ends early", errMalformed)
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.pos {
		r.err = errTruncated(r.err)
		return nil
	}
	r.pos += n
	return r.b[r.pos-n : r.pos]
}

// leb reads a LEB128 number of at most maxBytes bytes, unsigned.
func (r *reader) leb(maxBytes int) uint64 {
	var v uint64
	for i := 0; i < maxBytes; i++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v
		}
	}
	r.err = fmt.Errorf("%w: a number too long", errMalformed)
	return 0
}

func (r *reader) u32() uint32 {
	v := r.leb(5)
	if v > 1<<32-1 {
		r.err = fmt.Errorf("%w: a number too large", errMalformed)
		return 0
	}
	return uint32(v)
}

func (r *reader) name() string {
	n := r.u32()
	if n > maxNameLen {
		r.err = fmt.Errorf("%w: a name of %d bytes", errMalformed, n)
		return ""
	}
	return string(r.bytes(int(n)))
}

// valType reads a value type; a reference type may name its heap type.
func (r *reader) valType() {
	if b := r.byte(); b == 0x63 || b == 0x64 {
		r.heapType()
	}
}

// heapType reads a heap type (a signed 33-bit number).
func (r *reader) heapType() { r.leb(5) }

// blockType reads a block's type: empty, a value type or a type index.
func (r *reader) blockType() {
	b := r.byte()
	switch {
	case b == 0x63 || b == 0x64:
		r.heapType()
	case b&0x80 != 0:
		r.leb(4)
	}
}

// tableLimits reads a table's limits.
func (r *reader) tableLimits() tableLimits {
	minimum, maximum, hasMax := r.limits()
	return tableLimits{minimum: minimum, maximum: maximum, hasMax: hasMax}
}

// limits reads a table's or memory's limits.
func (r *reader) limits() (minimum, maximum uint64, hasMax bool) {
	flags := r.byte()
	minimum = r.leb(10)
	if flags&1 != 0 {
		maximum, hasMax = r.leb(10), true
	}
	return minimum, maximum, hasMax
}

// memarg reads a memory access's alignment (with a memory index when its
// bit 6 is set) and offset.
func (r *reader) memarg() {
	if align := r.u32(); align&0x40 != 0 {
		r.u32()
	}
	r.leb(10)
}

// constExpr reads a constant expression to its end.
func (r *reader) constExpr() {
	for !r.done() {
		op := r.byte()
		if op == 0x0b {
			return
		}
		r.immediates(op)
	}
	r.err = errTruncated(r.err)
}

// elementSegment reads an element segment and returns its number of
// elements.
func (r *reader) elementSegment() uint64 {
	flags := r.u32()
	if flags > 7 {
		r.err = fmt.Errorf("%w: element segment flags %d", errMalformed, flags)
		return 0
	}
	if flags&2 != 0 && flags&1 == 0 { // an explicit table index
		r.u32()
	}
	if flags&1 == 0 { // active: an offset
		r.constExpr()
	}
	if flags&3 != 0 { // an element kind or a reference type
		r.valType()
	}
	n := r.u32()
	if uint64(n) > uint64(len(r.b)-r.pos) {
		r.err = fmt.Errorf("%w: %d elements in %d bytes", errMalformed, n, len(r.b)-r.pos)
		return 0
	}
	for range n {
		if flags&4 != 0 {
			r.constExpr()
		} else {
			r.u32()
		}
		if r.err != nil {
			return 0
		}
	}
	return uint64(n)
}
