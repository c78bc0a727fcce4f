package release

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// writebackChunk is how much of a download is written before the kernel
// is asked to start writing it to disk, so that the final fsync waits
// for little.
const writebackChunk = 4 << 20

// startWriteback returns w, which on Linux asks the kernel to start
// writing each further writebackChunk of f to disk (sync_file_range
// SYNC_FILE_RANGE_WRITE: it does not wait, and is no substitute for the
// fsync).
func startWriteback(w io.Writer, f *os.File) io.Writer {
	return &writeback{w: w, f: f}
}

type writeback struct {
	w         io.Writer
	f         *os.File
	off, done int64
}

func (b *writeback) Write(p []byte) (int, error) {
	n, err := b.w.Write(p)
	b.off += int64(n)
	if b.off-b.done >= writebackChunk {
		unix.SyncFileRange(int(b.f.Fd()), b.done, b.off-b.done, unix.SYNC_FILE_RANGE_WRITE)
		b.done = b.off
	}
	return n, err
}
