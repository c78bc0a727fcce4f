package sandbox

import (
	"strings"
	"testing"
)

// oomWatch finds a runtime's out-of-memory line in stderr however the
// host's reads cut it, and nothing in lines that only resemble one.
func TestOOMWatch(t *testing.T) {
	for _, c := range []struct {
		stderr, want string
	}{
		{"starting\nfatal error: runtime: out of memory\n\nruntime stack:\n", "fatal error: runtime: out of memory"},
		{"runtime: out of memory: cannot allocate 4194304-byte block (3 in use)\nfatal error: out of memory\n", "runtime: out of memory: cannot allocate 4194304-byte block (3 in use)"},
		{"==1==ERROR: ThreadSanitizer failed to allocate 0x8000000 (134217728) bytes at address 218000000000 (errno: 12)\n", "==1==ERROR: ThreadSanitizer failed to allocate 0x8000000 (134217728) bytes at address 218000000000 (errno: 12)"},
		{"memory allocation of 1073741824 bytes failed\n", "memory allocation of 1073741824 bytes failed"},
		{"Traceback (most recent call last):\n  File \"p.py\", line 3\nMemoryError", "MemoryError"},
		{"terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n", "terminate called after throwing an instance of 'std::bad_alloc'"},
		{"level=info msg=\"no fatal error: runtime: out of memory here\"\n", ""},
		{strings.Repeat("x", 1000) + "fatal error: runtime: out of memory\n", ""},
		{"panic: nil map\n", ""},
	} {
		for _, size := range []int{1, 7, 4096} {
			w := &oomWatch{}
			for s := c.stderr; s != ""; {
				n := min(size, len(s))
				w.Write([]byte(s[:n]))
				s = s[n:]
			}
			if got := w.message(); got != c.want {
				t.Errorf("stderr %.60q in pieces of %d: recognised %q; want %q", c.stderr, size, got, c.want)
			}
		}
	}
}
