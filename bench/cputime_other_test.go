//go:build !unix

package bench

import "time"

// cpuTime is not measured here (no getrusage).
func cpuTime() (time.Duration, bool) { return 0, false }
