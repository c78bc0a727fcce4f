//go:build !linux && !darwin && !freebsd

package wasmhost

import (
	"io/fs"
	"time"
)

// lastUsed is info's modification time: the access time is not read
// here, so a module is trimmed by when it was compiled.
func lastUsed(info fs.FileInfo) time.Time { return info.ModTime() }
