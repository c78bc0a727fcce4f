//go:build race

package wasmhost_test

// raceEnabled: under the race detector, wazero's compiler takes minutes
// over a 30 MB module, so every test interprets.
const raceEnabled = true
