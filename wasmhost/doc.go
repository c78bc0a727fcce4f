// Package wasmhost runs WebAssembly plugins inside the host's process,
// with wazero (pure Go, no cgo): the same plugin, built with
// GOOS=wasip1 GOARCH=wasm, its handshake, versions, broker and adapters
// as a native binary's, isolated on every system without root, one
// artifact for all of them.
//
// A Runtime is a host.GuestRunner: set it as host.Command.Runner and
// host.Start runs a Command.Path that is a WebAssembly module (it starts
// with "\0asm") inside this process, giving the same *host.Client. The
// manager uses one for the .wasm files it discovers (manager.Finder.Guests).
//
// A guest is granted nothing by default: no directory (every file access
// fails), no network (Go's wasip1 net is an in-memory fake: dialling out
// fails), only the environment the host gives it (the handshake variables,
// Command.Env, and the host's variables Command.InheritEnv names), a
// memory limit (Config.MemoryLimit) and, when set, a CPU budget per call
// (Config.CPUBudget). A guest's connection to its host is in memory: a
// file the Runtime mounts for it (a preopen of its own), which plugin.Serve
// makes its descriptor 0 and waits on without any OS pipe or system call,
// on every system. See docs/wasm.md.
package wasmhost
