package hostwire

import "strings"

// wasmMagic starts every WebAssembly module.
const wasmMagic = "\x00asm"

// WasmMagicLen is how many bytes of a file IsWasmModule needs.
const WasmMagicLen = len(wasmMagic)

// IsWasmModule reports whether module, a file's content or its first
// bytes, is a WebAssembly module: it starts with the magic "\0asm". It is
// the one check behind host.IsWasm and wasmhost's refusal of other files,
// and needs no WebAssembly runtime.
func IsWasmModule(module []byte) bool { return strings.HasPrefix(string(module), wasmMagic) }
