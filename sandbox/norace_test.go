//go:build !race

package sandbox_test

// raceEnabled: this test binary, which is also the probe plugin, has the
// race detector, whose shadow memory counts in RLIMIT_DATA.
const raceEnabled = false
