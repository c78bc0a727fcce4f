// Package wazeroversion makes wazero, in the test binary that imports it,
// key its compilation cache by the version go.mod requires
// (testutil.WazeroVersion), as a program built with go build or go run
// does: wasmcompile, which fills the tests' cache (testutil.CompiledWasm),
// and the test binary of a package main. A library's test binary has no
// dependencies in its build information, and its wazero read "dev": its
// Runtimes looked for the modules compiled in another directory than the
// one wasmcompile and the commands' tests use, and the tests compiled the
// memory example's module once for each.
//
// A test binary that starts compiled modules from the tests' cache
// imports it for its effect:
//
//	import _ "github.com/plugkit/plugkit/internal/testutil/wazeroversion"
package wazeroversion
