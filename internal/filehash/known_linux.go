package filehash

import (
	"os"
	"syscall"
	"time"
)

// fileKey is a file's identity: its device and inode.
type fileKey struct{ dev, ino uint64 }

// fileState is what changes when a file's content does.
type fileState struct {
	size         int64
	mtime, ctime syscall.Timespec
}

// changed is when the file last changed.
func (s fileState) changed() time.Time { return time.Unix(s.ctime.Unix()) }

// identify returns f's identity and state; ok is false for a file that
// is not a regular one or whose state cannot be read.
func identify(f *os.File) (fileKey, fileState, bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fileKey{}, fileState{}, false
	}
	return fileKey{st.Dev, st.Ino}, fileState{st.Size, st.Mtim, st.Ctim}, true
}
