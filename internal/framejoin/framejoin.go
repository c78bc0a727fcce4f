package framejoin

import (
	"encoding/binary"
	"io"
	"sync"
)

// headerSize is the size of a yamux frame header: version, type, flags
// (2 bytes), stream ID (4) and length (4).
const headerSize = 12

// typeData is yamux's data frame type, the only one with a body.
const typeData = 0

// Writer writes to W, joining each yamux data frame header to the body
// that follows it. The bytes W receives, and their order, are those
// written; only how they are split into Write calls changes.
type Writer struct {
	W io.Writer

	mu   sync.Mutex
	held [headerSize]byte
	body int // the held header's body length; 0: none held
	buf  []byte
}

// Write writes p, or holds it when it is a data frame's header whose body
// is still to come.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.body == 0 {
		if n := bodyLen(p); n > 0 {
			copy(w.held[:], p)
			w.body = n
			return len(p), nil
		}
		return w.W.Write(p)
	}
	// A header is held: send it with p, which is its body in the way
	// yamux writes (and, if not, simply the bytes after it).
	w.body = 0
	w.buf = append(append(w.buf[:0], w.held[:]...), p...)
	n, err := w.W.Write(w.buf)
	return max(n-headerSize, 0), err
}

// bodyLen is the body length announced by p when p is exactly a yamux
// data frame header, or 0.
func bodyLen(p []byte) int {
	if len(p) != headerSize || p[1] != typeData {
		return 0
	}
	return int(binary.BigEndian.Uint32(p[8:12]))
}
