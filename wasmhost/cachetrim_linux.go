package wasmhost

import (
	"io/fs"
	"syscall"
	"time"
)

// lastUsed is the later of info's modification and access times.
func lastUsed(info fs.FileInfo) time.Time {
	used := info.ModTime()
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		if at := time.Unix(st.Atim.Unix()); at.After(used) {
			used = at
		}
	}
	return used
}
