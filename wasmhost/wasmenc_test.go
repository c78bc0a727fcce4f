package wasmhost_test

// A tiny WebAssembly binary encoder for tests: enough to write the
// hostile modules of issue 36 (point 9) as byte slices, without a
// toolchain.

// Section ids of the binary format.
const (
	secType     = 1
	secImport   = 2
	secFunction = 3
	secTable    = 4
	secMemory   = 5
	secExport   = 7
	secCode     = 10
)

// Opcodes the test modules use.
const (
	opBlock      = 0x02
	opLoop       = 0x03
	opBr         = 0x0c
	opBrIf       = 0x0d
	opEnd        = 0x0b
	opDrop       = 0x1a
	opLocalGet   = 0x20
	opLocalSet   = 0x21
	opLocalTee   = 0x22
	opMemoryGrow = 0x40
	opI32Const   = 0x41
	opI32LtU     = 0x49
	opI32Add     = 0x6a
	opRefNull    = 0xd0
	opPrefixFC   = 0xfc
	tableGrowFC  = 15
	memoryFillFC = 11
	funcref      = 0x70
	i32          = 0x7f
	voidBlock    = 0x40
)

// uleb is n in unsigned LEB128.
func uleb(n uint64) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			c |= 0x80
		}
		b = append(b, c)
		if n == 0 {
			return b
		}
	}
}

// sleb is n in signed LEB128.
func sleb(n int64) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		done := (n == 0 && c&0x40 == 0) || (n == -1 && c&0x40 != 0)
		if !done {
			c |= 0x80
		}
		b = append(b, c)
		if done {
			return b
		}
	}
}

// cat joins byte slices.
func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// vec is a vector: its count, then its items.
func vec(items ...[]byte) []byte {
	return cat(uleb(uint64(len(items))), cat(items...))
}

// section is a section with its id and size.
func section(id byte, payload []byte) []byte {
	return cat([]byte{id}, uleb(uint64(len(payload))), payload)
}

// module is a module of the sections given.
func module(sections ...[]byte) []byte {
	return cat([]byte("\x00asm\x01\x00\x00\x00"), cat(sections...))
}

// body is a function body: its local declarations (pairs of count and
// type) and its code, which must end with opEnd.
func body(locals [][2]uint64, code []byte) []byte {
	var decls [][]byte
	for _, l := range locals {
		decls = append(decls, cat(uleb(l[0]), []byte{byte(l[1])}))
	}
	b := cat(vec(decls...), code)
	return cat(uleb(uint64(len(b))), b)
}

// voidType is the type section of one type, () -> ().
var voidType = section(secType, vec([]byte{0x60, 0, 0}))

// startExport exports function 0 as _start, which wazero runs at
// instantiation.
var startExport = section(secExport, vec(cat(uleb(6), []byte("_start"), []byte{0}, uleb(0))))

// localsBomb is one function declaring n locals of type i32 (wazero
// v1.12.0 allocates a byte for each, before any check).
func localsBomb(n uint64) []byte {
	return module(voidType,
		section(secFunction, vec(uleb(0))),
		section(secCode, vec(body([][2]uint64{{n, i32}}, []byte{opEnd}))))
}

// tableGrowBomb has a funcref table of no maximum, and a _start that
// grows it by entries.
func tableGrowBomb(entries uint32) []byte {
	code := cat([]byte{opRefNull, funcref, opI32Const}, sleb(int64(int32(entries))), []byte{opPrefixFC}, uleb(tableGrowFC), uleb(0), []byte{opDrop, opEnd})
	return module(voidType,
		section(secFunction, vec(uleb(0))),
		section(secTable, vec([]byte{funcref, 0, 0})),
		startExport,
		section(secCode, vec(body(nil, code))))
}

// memoryGrowModule has a memory of one page, no maximum, and a _start
// that grows it to pages pages, one page at a time (as Go's allocator
// does, in steps), filling each page it adds so that it is resident.
func memoryGrowModule(pages uint32) []byte {
	// local 0: the address of the next page.
	code := cat(
		[]byte{opLoop, voidBlock},
		[]byte{opI32Const}, sleb(1), []byte{opMemoryGrow, 0, opDrop},
		[]byte{opLocalGet, 0, opI32Const}, sleb(pageSize), []byte{opI32Add, opLocalTee, 0},
		[]byte{opI32Const}, sleb(1), []byte{opI32Const}, sleb(pageSize), []byte{opPrefixFC}, uleb(memoryFillFC), []byte{0},
		[]byte{opLocalGet, 0, opI32Const}, sleb(int64(pages-1)*pageSize), []byte{opI32LtU, opBrIf, 0},
		[]byte{opEnd, opEnd})
	return module(voidType,
		section(secFunction, vec(uleb(0))),
		section(secMemory, vec([]byte{0, 1})),
		startExport,
		section(secCode, vec(body([][2]uint64{{1, i32}}, code))))
}

// pageSize is a WebAssembly page.
const pageSize = 64 << 10

// nestedBlocks is one function of depth nested blocks.
func nestedBlocks(depth int) []byte {
	code := make([]byte, 0, 3*depth+1)
	for range depth {
		code = append(code, opBlock, voidBlock)
	}
	for range depth {
		code = append(code, opEnd)
	}
	code = append(code, opEnd)
	return module(voidType,
		section(secFunction, vec(uleb(0))),
		section(secCode, vec(body(nil, code))))
}

// manyFunctions is n empty functions.
func manyFunctions(n int) []byte {
	funcs := make([]byte, 0, n+8)
	funcs = append(funcs, uleb(uint64(n))...)
	for range n {
		funcs = append(funcs, 0)
	}
	codes := make([]byte, 0, 3*n+8)
	codes = append(codes, uleb(uint64(n))...)
	for range n {
		codes = append(codes, body(nil, []byte{opEnd})...)
	}
	return module(voidType, section(secFunction, funcs), section(secCode, codes))
}

// manyBlockFunctions is n functions of blocks blocks each, one after
// another: inside the limits, and slow to compile.
func manyBlockFunctions(n, blocks int) []byte {
	code := make([]byte, 0, 3*blocks+1)
	for range blocks {
		code = append(code, opBlock, voidBlock, opEnd)
	}
	code = append(code, opEnd)
	funcs := make([][]byte, n)
	bodies := make([][]byte, n)
	for i := range n {
		funcs[i] = uleb(0)
		bodies[i] = body(nil, code)
	}
	return module(voidType, section(secFunction, vec(funcs...)), section(secCode, vec(bodies...)))
}
