package listen

import (
	"testing"

	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/internal/testutil"
)

// Both systems' decisions are checked on every system.
func TestNetwork(t *testing.T) {
	cases := []struct {
		requested   string
		unixSockets bool
		want        string
	}{
		{"", true, "unix"},
		{"unix", true, "unix"},
		{"tcp", true, "tcp"},
		{"", false, "tcp"}, // Windows
		{"unix", false, "tcp"},
		{"tcp", false, "tcp"},
	}
	for _, c := range cases {
		if got := network(c.requested, c.unixSockets); got != c.want {
			t.Errorf("network(%q, unixSockets=%v) = %q, want %q", c.requested, c.unixSockets, got, c.want)
		}
	}
}

// Local listens on this system's default network.
func TestLocal(t *testing.T) {
	ln, err := Local(UnixConfig{Dir: testutil.TempDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	want := "unix"
	if !osdep.UnixSockets {
		want = "tcp"
	}
	if got := ln.Addr().Network(); got != want {
		t.Errorf("Local listens on %s, want %s", got, want)
	}
}
