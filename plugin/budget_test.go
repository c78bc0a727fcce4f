package plugin

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/net/http2"
)

// TestFrameSnifferFindsMessageSizes feeds the sniffer what a client
// sends, in pieces of every size, and checks the sizes and ends it
// announces: padded DATA frames, prefixes split across frames, several
// messages in one frame, frames of other streams and types between.
func TestFrameSnifferFindsMessageSizes(t *testing.T) {
	msg := func(n int, compressed bool) []byte {
		b := make([]byte, 5+n)
		if compressed {
			b[0] = 1
		}
		binary.BigEndian.PutUint32(b[1:], uint32(n))
		return b
	}
	var wire bytes.Buffer
	wire.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&wire, nil)
	fr.WriteSettings()
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte("h1"), EndHeaders: true})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: []byte("h3"), EndHeaders: true})
	// Stream 1: a 7-byte message, then a compressed 300-byte one whose
	// prefix is split across two padded frames, then the end.
	s1 := append(msg(7, false), msg(300, true)...)
	fr.WriteDataPadded(1, false, s1[:14], make([]byte, 9))
	fr.WritePing(false, [8]byte{})
	fr.WriteDataPadded(1, false, s1[14:], []byte{})
	fr.WriteData(1, true, nil)
	// Stream 3: two messages in one frame and the end with them; stream
	// 5, not followed, in between.
	fr.WriteData(5, false, msg(40, false))
	fr.WriteData(3, true, append(msg(0, false), msg(70000, false)[:100]...))
	// Stream 7 ends with its headers.
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 7, BlockFragment: []byte("h7"), EndHeaders: true, EndStream: true})

	b := &budget{maxMsg: 1 << 20}
	// gRPC's framer reads the preface, then each frame's header and
	// payload, and nothing ahead; the sniffer may get each in pieces.
	var reads [][]byte
	data := wire.Bytes()
	reads = append(reads, data[:len(http2.ClientPreface)])
	for data = data[len(http2.ClientPreface):]; len(data) > 0; {
		n := 9 + (int(data[0])<<16 | int(data[1])<<8 | int(data[2]))
		reads = append(reads, data[:9], data[9:n])
		data = data[n:]
	}
	for _, step := range []int{1, 2, 3, 7, 4096} {
		s := newFrameSniffer()
		calls := map[uint32]*callBudget{}
		for _, r := range reads {
			for len(r) > 0 {
				n := min(step, len(r))
				s.read(r[:n])
				r = r[n:]
			}
			// The tap runs when a new stream's headers were read.
			if id := s.lastHeaders; id != 0 && calls[id] == nil && !s.inFrame {
				cb := &callBudget{b: b, sn: s, stream: id, eos: s.lastHeadersEnd}
				calls[id] = cb
				s.register(cb)
			}
		}
		for id, want := range map[uint32][]msgSize{1: {{7, false}, {300, true}}, 3: {{0, false}, {70000, false}}, 7: nil} {
			cb := calls[id]
			if cb == nil {
				t.Fatalf("reads of %d bytes: no tap for stream %d", step, id)
			}
			if len(cb.sizes) != len(want) || !cb.eos {
				t.Fatalf("reads of %d bytes: stream %d: sizes %v, end %v; want %v and the end", step, id, cb.sizes, cb.eos, want)
			}
			for i := range want {
				if cb.sizes[i] != want[i] {
					t.Fatalf("reads of %d bytes: stream %d: sizes %v, want %v", step, id, cb.sizes, want)
				}
			}
		}
	}
}

// TestFrameSnifferFollowsOnlyHTTP2: the sniffer follows a connection once
// it has read the client preface, and never one whose bytes are not
// HTTP/2's (a TLS handshake, under grpc.Creds the service did not place
// it for), nor one it reads nothing of.
func TestFrameSnifferFollowsOnlyHTTP2(t *testing.T) {
	s := newFrameSniffer()
	if s.following() {
		t.Error("following before any byte")
	}
	s.read([]byte(http2.ClientPreface[:10]))
	s.read([]byte(http2.ClientPreface[10:]))
	if !s.following() {
		t.Error("not following after the client preface")
	}
	tlsHello := []byte{0x16, 0x03, 0x01, 0x00, 0xc8, 0x01, 0x00, 0x00, 0xc4, 0x03, 0x03}
	s = newFrameSniffer()
	s.read(tlsHello)
	s.read([]byte(http2.ClientPreface))
	if s.following() {
		t.Error("following a connection that began with a TLS record")
	}
}
