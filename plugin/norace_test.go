//go:build !race

package plugin_test

// raceDetector scales down the loads whose every byte the race detector
// would check: it makes a 480 MiB load take 20 s instead of 2.
const raceDetector = false
