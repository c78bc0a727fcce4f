// Command wasmcompile compiles WebAssembly modules into a wazero
// compilation cache:
//
//	go run ./internal/tools/wasmcompile -cache DIR MODULE.wasm...
//
// Tests built with -race run it (testutil.CompiledWasm) because wazero's
// compiler, built with the race detector, takes minutes over a 30 MB Go
// module; built without it, seconds. The cache is keyed by each module's
// content, the wazero version and the CPU, so the race-built test then
// loads the compiled module from it in a fraction of a second (the test
// binary reads it under the version go.mod requires, which this tool,
// built by go run, has: internal/testutil/wazeroversion). The cache
// keeps at most 4 GiB (each entry is some 90 MB): the entries used longest
// ago go first (wasmhost.Config.CacheBytes). Two runs never compile the
// same module at once: the second waits for the first and finds it
// compiled (a lock file per module).
package main
