//go:build !race

package wasmhost_test

// raceEnabled: without the race detector, the tests that are about the
// compiler (and its cache) compile.
const raceEnabled = false
