//go:build !linux

package scale

import "time"

// closeCPU measures nothing where there is no /proc: the scale benchmark
// runs on Linux only.
func closeCPU(bool) (end func() (host, plugins time.Duration, switches int64)) {
	return func() (host, plugins time.Duration, switches int64) { return 0, 0, 0 }
}
