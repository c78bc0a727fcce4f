package guestcall

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// A guest's connection that carries unary calls carries chunks: a tag,
// a 4-byte big-endian length and that many bytes, either bytes of the
// multiplexed session (the streams, the broker, HTTP/2 if any) or the
// frames of one unary call, a request or its answer. A unary call so
// costs each side one write and no stream of the session: the guest's
// reader hands it to a handler, whose answer is written at once, without
// the session's goroutines in between.
const (
	chunkSession byte = 'y'
	chunkCall    byte = 'c'
	chunkHeader       = 5
)

// Conn is one end of a guest's connection with unary calls taken out: its
// Read and Write carry the session's bytes; calls go to the handler it was
// made with.
type Conn struct {
	net.Conn
	br      *bufio.Reader
	remain  int // bytes left of the session chunk being read
	maxCall int // the most a call chunk may hold
	call    func([]byte) error
	ended   func(error)
	endOnce sync.Once
	wmu     sync.Mutex
	wbuf    []byte
}

func newConn(raw net.Conn, maxCall int, call func([]byte) error, ended func(error)) *Conn {
	return &Conn{Conn: raw, br: bufio.NewReaderSize(raw, 64<<10), maxCall: maxCall, call: call, ended: ended}
}

// Read reads the session's bytes, handing each call chunk it meets to the
// call handler on the way.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.read(p)
	if err != nil && c.ended != nil {
		c.endOnce.Do(func() { c.ended(err) })
	}
	return n, err
}

func (c *Conn) read(p []byte) (int, error) {
	for c.remain == 0 {
		var h [chunkHeader]byte
		if _, err := io.ReadFull(c.br, h[:]); err != nil {
			return 0, err
		}
		n := binary.BigEndian.Uint32(h[1:])
		switch h[0] {
		case chunkSession:
			c.remain = int(n)
		case chunkCall:
			if uint64(n) > uint64(c.maxCall) {
				return 0, fmt.Errorf("guestcall: a call of %d bytes, more than the %d allowed", n, c.maxCall)
			}
			b := make([]byte, n)
			if _, err := io.ReadFull(c.br, b); err != nil {
				return 0, err
			}
			if err := c.call(b); err != nil {
				return 0, err
			}
		default:
			return 0, fmt.Errorf("guestcall: a chunk of unknown kind %q", h[0])
		}
	}
	if len(p) > c.remain {
		p = p[:c.remain]
	}
	n, err := c.br.Read(p)
	c.remain -= n
	return n, err
}

// Write writes the session's bytes p, as one chunk.
func (c *Conn) Write(p []byte) (int, error) {
	if err := c.writeChunk(chunkSession, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeCall writes the frames of one call, as one chunk.
func (c *Conn) writeCall(p []byte) error { return c.writeChunk(chunkCall, p) }

func (c *Conn) writeChunk(tag byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = append(c.wbuf[:0], tag)
	c.wbuf = binary.BigEndian.AppendUint32(c.wbuf, uint32(len(p)))
	c.wbuf = append(c.wbuf, p...)
	_, err := c.Conn.Write(c.wbuf)
	if cap(c.wbuf) > 256<<10 {
		c.wbuf = nil // a large message's buffer is not kept
	}
	return err
}

// callWriter writes a call's frames to a Conn.
type callWriter struct{ c *Conn }

func (w callWriter) Write(p []byte) (int, error) {
	if err := w.c.writeCall(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// errShort reports a frame longer than what holds it.
var errShort = errors.New("a frame longer than its chunk")

// nextFrame splits the first frame off b; limit is readFrame's.
func nextFrame(b []byte, limit func(kind byte, id uint32) int) (kind byte, id uint32, payload, rest []byte, err error) {
	if len(b) < frameHeader {
		return 0, 0, nil, nil, errShort
	}
	kind, id, n := b[0], binary.BigEndian.Uint32(b[1:]), binary.BigEndian.Uint32(b[5:])
	b = b[frameHeader:]
	max := limit(kind, id)
	switch {
	case max == skip:
		if uint64(n) > uint64(len(b)) {
			return kind, id, nil, nil, errShort
		}
		return kind, id, nil, b[n:], nil
	case max <= 0:
		return kind, id, nil, nil, fmt.Errorf("a frame of unknown kind %q", kind)
	case uint64(n) > uint64(max):
		return kind, id, nil, nil, &errFrameTooLarge{kind: kind, size: n, max: uint32(max)}
	case uint64(n) > uint64(len(b)):
		return kind, id, nil, nil, errShort
	}
	return kind, id, b[:n:n], b[n:], nil
}
