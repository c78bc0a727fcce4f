package wasmhost

import (
	"io"
	"testing"
)

// TestOOMWatch: both of the Go runtime's out-of-memory messages are
// seen, also when split across writes; other text is not.
func TestOOMWatch(t *testing.T) {
	for _, writes := range [][]string{
		{"fatal error: runtime: out of memory\n"},
		{"fatal error: runtime: cannot all", "ocate memory\nruntime stack:\n"},
		{"fatal error: runtime: out of ", "memory"},
	} {
		o := &oomWatch{w: io.Discard}
		for _, w := range writes {
			o.Write([]byte(w))
		}
		if !o.seen() {
			t.Errorf("%q: not seen as out of memory", writes)
		}
	}
	o := &oomWatch{w: io.Discard}
	o.Write([]byte("panic: cannot allocate a thing\n"))
	if o.seen() {
		t.Error("an unrelated panic was seen as out of memory")
	}
}
