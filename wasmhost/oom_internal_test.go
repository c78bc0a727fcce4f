package wasmhost

import (
	"io"
	"testing"
)

// TestOOMWatchSeesBothRuntimeMessages: the Go runtime of a guest at its
// limit throws "out of memory" or "cannot allocate memory" depending on
// what it was allocating; both count, also when split across writes, and
// other output does not.
func TestOOMWatchSeesBothRuntimeMessages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   bool
	}{
		{"heap", []string{"fatal error: out of memory\n"}, true},
		{"runtime structures", []string{"fatal error: runtime: cannot allocate memory\n"}, true},
		{"split", []string{"fatal error: runtime: cannot allo", "cate memory\n"}, true},
		{"split heap", []string{"fatal error: out of mem", "ory\n"}, true},
		{"other", []string{"panic: something else\n", "memory is fine\n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &oomWatch{w: io.Discard}
			for _, w := range tc.writes {
				if n, err := o.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := o.seen(); got != tc.want {
				t.Errorf("seen() = %v after %q, want %v", got, tc.writes, tc.want)
			}
		})
	}
}
