package framejoin

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// recorder keeps each Write separately.
type recorder struct{ writes [][]byte }

func (r *recorder) Write(p []byte) (int, error) {
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

func header(typ byte, length uint32) []byte {
	h := make([]byte, headerSize)
	h[1] = typ
	binary.BigEndian.PutUint32(h[4:8], 3)
	binary.BigEndian.PutUint32(h[8:12], length)
	return h
}

// TestWriterJoinsDataHeaderAndBody: a data frame goes out in one Write;
// other frames (window updates, an empty data frame) and other bytes go
// out as they came, and the stream of bytes is unchanged.
func TestWriterJoinsDataHeaderAndBody(t *testing.T) {
	var rec recorder
	w := &Writer{W: &rec}
	body := []byte("hello")
	in := [][]byte{
		header(typeData, 5), body,
		header(1, 65536), // window update: no body
		header(typeData, 0),
		[]byte("not a header"),
		header(typeData, 2), []byte("hi"),
	}
	var want []byte
	for _, p := range in {
		n, err := w.Write(p)
		if err != nil || n != len(p) {
			t.Fatalf("Write(%d bytes) = %d, %v", len(p), n, err)
		}
		want = append(want, p...)
	}
	if got := bytes.Join(rec.writes, nil); !bytes.Equal(got, want) {
		t.Fatalf("bytes written changed:\n got %x\nwant %x", got, want)
	}
	lens := []int{}
	for _, p := range rec.writes {
		lens = append(lens, len(p))
	}
	wantLens := []int{headerSize + 5, headerSize, headerSize, 12, headerSize + 2}
	if len(lens) != len(wantLens) {
		t.Fatalf("write sizes %v, want %v", lens, wantLens)
	}
	for i := range lens {
		if lens[i] != wantLens[i] {
			t.Fatalf("write sizes %v, want %v", lens, wantLens)
		}
	}
}
