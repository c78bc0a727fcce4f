package main

import (
	"github.com/plugkit/plugkit/wasmhost"
)

// checkRuntime is the runtime install and release push run a WebAssembly
// module in for its Describe check: compiled into cacheDir (--wasm-cache)
// when given, so that the host's first start finds it compiled, else
// interpreted, which is ready several times sooner for one Describe. The
// caller closes it.
func checkRuntime(cacheDir string) *wasmhost.Runtime {
	return wasmhost.New(wasmhost.Config{CacheDir: cacheDir, Interpret: cacheDir == ""})
}
