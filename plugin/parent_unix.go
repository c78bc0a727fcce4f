//go:build !windows && !wasip1

package plugin

import "os"

// parentProbe reports the parent gone when this process was re-parented:
// on unix an orphan's parent becomes init or a subreaper, so its parent
// pid changes.
func parentProbe() (gone func() bool, release func()) {
	parent := os.Getppid()
	return func() bool { return os.Getppid() != parent }, func() {}
}
