package filehash

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// racyWindow is how long after a file's last change its digest is not
// remembered: a write within the same tick of the file system's clock
// as an earlier one may leave the change time as it was, so only a file
// left alone for longer can be told unchanged by its times.
const racyWindow = time.Second

// maxKnown bounds how many digests SHA256File remembers; past it, it
// forgets them all and starts over.
const maxKnown = 1024

// known holds the digests of the files SHA256File has hashed, by their
// identity (device, inode) with the times and size they had.
var known struct {
	sync.Mutex
	sums map[fileKey]knownSum
}

// knownSum is a remembered digest and the state of its file.
type knownSum struct {
	state fileState
	sum   string
}

// reads counts the files SHA256File read (a test hook).
var reads atomic.Int64

// SHA256File returns the hex SHA-256 of the open file f, as SHA256 does,
// reading it from its current offset (the start, for a file just opened).
// Where the system gives a file's identity and change time (Linux), it
// remembers the digest of a file unchanged for a second or more, and
// returns it without reading when f is the same file (device and inode)
// with the same size, modification time and change time. The change
// time is set by the kernel on every write, rename and attribute change,
// and cannot be set back by the file's owner, as the modification time
// can.
func SHA256File(ctx context.Context, f *os.File) (string, error) {
	key, before, ok := identify(f)
	if ok {
		known.Lock()
		k, hit := known.sums[key]
		known.Unlock()
		if hit && k.state == before {
			return k.sum, nil
		}
	}
	start := time.Now()
	reads.Add(1)
	sum, err := SHA256(ctx, f)
	if err != nil || !ok {
		return sum, err
	}
	if _, after, ok := identify(f); ok && after == before && start.Sub(before.changed()) > racyWindow {
		known.Lock()
		if len(known.sums) >= maxKnown || known.sums == nil {
			known.sums = make(map[fileKey]knownSum)
		}
		known.sums[key] = knownSum{state: before, sum: sum}
		known.Unlock()
	}
	return sum, nil
}
