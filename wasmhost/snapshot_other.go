//go:build !linux

package wasmhost

import "os"

// snapshotFile is nil on this system: restore copies a snapshot into each
// guest's memory.
func snapshotFile(*snapshot) *os.File { return nil }

// mapSnapshot does nothing on this system.
func mapSnapshot(*os.File, []byte) bool { return false }
