package guestcall

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc/metadata"
)

// Magic opens every call stream, so that the guest tells it from the
// HTTP/2 connection of a host that does not use this package (whose
// preface begins "PRI ").
const Magic = "PKC1"

// MaxMetadata bounds the payload of a call's header and trailer frames
// (metadata, method, status with its details): 1 MiB, as a grpc-go
// client's default bound on a header list is far larger than any plugin
// needs and a peer must not make the other side hold more.
const MaxMetadata = 1 << 20

// Frame kinds. The host sends kindCall, then kindMessage frames, then
// kindEnd (no more messages) or kindCancel; the guest answers with
// kindHeader (optional), kindMessage frames and one kindTrailer.
const (
	kindCall    byte = 'h'
	kindMessage byte = 'm'
	kindEnd     byte = 'e'
	kindCancel  byte = 'c'
	kindHeader  byte = 'H'
	kindTrailer byte = 'T'
)

// frameHeader is a frame's kind, call ID and length. The ID tells the
// calls of a lane apart (0 on a call stream, which holds one call).
const frameHeader = 9

// appendHead appends the header of a frame of kind for call id, n bytes
// long.
func appendHead(b []byte, kind byte, id uint32, n int) []byte {
	b = append(b, kind)
	b = binary.BigEndian.AppendUint32(b, id)
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// appendFrame appends a frame of kind for call id with payload to b.
func appendFrame(b []byte, kind byte, id uint32, payload []byte) []byte {
	return append(appendHead(b, kind, id, len(payload)), payload...)
}

// errFrameTooLarge reports a frame over its bound.
type errFrameTooLarge struct {
	kind      byte
	size, max uint32
}

func (e *errFrameTooLarge) Error() string {
	return fmt.Sprintf("a %s of %d bytes, more than the %d allowed", kindName(e.kind), e.size, e.max)
}

func kindName(k byte) string {
	switch k {
	case kindMessage:
		return "message"
	case kindCall, kindHeader:
		return "header"
	case kindTrailer:
		return "trailer"
	}
	return fmt.Sprintf("frame of kind %q", k)
}

// skip is what a limit returns for a frame to read past unseen.
const skip = -1

// readFrame reads one frame; limit says the most a frame of kind for
// call id may hold (0: the frame is not allowed; skip: read past it
// without keeping it, and return it with a nil payload). The payload is
// read only once its length is within the bound.
func readFrame(r *bufio.Reader, limit func(kind byte, id uint32) int) (byte, uint32, []byte, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, 0, nil, err
	}
	kind, id, n := h[0], binary.BigEndian.Uint32(h[1:]), binary.BigEndian.Uint32(h[5:])
	max := limit(kind, id)
	switch {
	case max == skip:
		_, err := r.Discard(int(n))
		return kind, id, nil, err
	case max <= 0:
		return kind, id, nil, fmt.Errorf("a frame of unknown kind %q", kind)
	case uint64(n) > uint64(max):
		return kind, id, nil, &errFrameTooLarge{kind: kind, size: n, max: uint32(max)}
	case n == 0:
		return kind, id, nil, nil
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return kind, id, nil, err
	}
	return kind, id, p, nil
}

// appendString appends s, its length first.
func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendMD appends md: its count of values, then each key and value.
func appendMD(b []byte, md metadata.MD) []byte {
	n := 0
	for _, vs := range md {
		n += len(vs)
	}
	b = binary.AppendUvarint(b, uint64(n))
	for k, vs := range md {
		for _, v := range vs {
			b = appendString(b, k)
			b = appendString(b, v)
		}
	}
	return b
}

var errTruncated = errors.New("a frame ends in the middle of a field")

// decoder reads the fields of a payload.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = errTruncated
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// md reads metadata: each value takes at least two bytes of the payload,
// so a count past that is refused before anything is allocated.
func (d *decoder) md() metadata.MD {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b))/2 {
		d.err = errTruncated
		return nil
	}
	if n == 0 {
		return nil
	}
	md := make(metadata.MD, min(n, 64))
	for range n {
		k, v := d.string(), d.string()
		if d.err != nil {
			return nil
		}
		k = strings.ToLower(k)
		md[k] = append(md[k], v)
	}
	return md
}
