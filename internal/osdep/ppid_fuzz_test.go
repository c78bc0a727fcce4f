package osdep

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzParsePPID: a plugin names its own process (prctl PR_SET_NAME, up to
// 15 bytes, any but NUL), and that name sits in /proc/PID/stat between
// parentheses. Whatever the name, ParsePPID reads the parent pid the
// kernel wrote after it; and it never reads a number from a line without
// one.
func FuzzParsePPID(f *testing.F) {
	for _, comm := range []string{"plugin", "a) S 1 (", ") R 99 ", "((((", "x\ny", "", "))))))))))))))"} {
		f.Add(comm, 4242)
	}
	f.Fuzz(func(t *testing.T, comm string, ppid int) {
		if ppid < 0 {
			ppid = -ppid
		}
		if ppid < 0 || strings.IndexByte(comm, 0) >= 0 {
			return
		}
		if len(comm) > 15 {
			comm = comm[:15]
		}
		stat := fmt.Sprintf("123 (%s) S %d 123 123 0 -1 4194560 0 0 0 0\n", comm, ppid)
		if got, err := ParsePPID(stat); err != nil || got != ppid {
			t.Fatalf("ParsePPID(%q) = %d, %v; want %d", stat, got, err, ppid)
		}
		if _, err := ParsePPID(comm); err == nil && !strings.Contains(comm, ")") {
			t.Fatalf("ParsePPID(%q), a line without the name's parenthesis, succeeded", comm)
		}
	})
}
