//go:build wasip1

package plugin

import _ "unsafe" // go:linkname

// A plugin built with -buildmode=c-shared is a WASI reactor: its runtime
// and package inits run in its export _initialize, which returns to the
// host, and its main does not run. plugkit's host records the guest's
// memory then, starts later guests from that record, and calls
// plugkit_main to run the program's main (wasmhost: a start without the
// inits). A plugin built as a command (the default) runs as before.

// programMain is the program's main.main.
//
//go:linkname programMain main.main
func programMain()

// plugkitMain runs the program's main in a reactor, once the host has
// called _initialize (or started the guest from a record of it).
//
//go:wasmexport plugkit_main
//lint:ignore U1000 the host calls it: go:wasmexport exports it
func plugkitMain() { programMain() }
