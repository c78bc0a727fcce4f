package hostwire

import (
	"io"
	"os"
	"strings"
)

// wasmMagic starts every WebAssembly module.
const wasmMagic = "\x00asm"

// WasmMagicLen is how many bytes of a file IsWasmModule needs.
const WasmMagicLen = len(wasmMagic)

// IsWasmModule reports whether module, a file's content or its first
// bytes, is a WebAssembly module: it starts with the magic "\0asm". It is
// the one check behind IsWasm and wasmhost's refusal of other files,
// and needs no WebAssembly runtime.
func IsWasmModule(module []byte) bool { return strings.HasPrefix(string(module), wasmMagic) }

// IsWasm reports whether the file at path is a WebAssembly module (it
// starts with the magic "\0asm"); false when it cannot be read. host,
// manager, describe, release and conformance tell modules from binaries
// with it.
func IsWasm(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, WasmMagicLen)
	_, err = io.ReadFull(f, head)
	return err == nil && IsWasmModule(head)
}
