package listen

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

func TestUnixIsPrivateAndCleansUp(t *testing.T) {
	testutil.NotOnWindows(t, "unix sockets: Windows plugins listen on loopback TCP")
	ln, err := Unix(UnixConfig{Dir: testutil.TempDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	dir := Dir(ln)
	for path, want := range map[string]os.FileMode{dir: 0o700, ln.Addr().String(): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", path, got, want)
		}
	}
	c, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatalf("dialing the socket: %v", err)
	}
	c.Close()
	ln.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("socket directory %s left behind after Close (%v)", dir, err)
	}
}

func TestUnixFallsBackFromALongTempDir(t *testing.T) {
	testutil.NotOnWindows(t, "unix sockets: Windows plugins listen on loopback TCP")
	long := filepath.Join(testutil.TempDir(t), strings.Repeat("d", 90))
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", long)
	ln, err := Unix(UnixConfig{})
	if err != nil {
		t.Fatalf("Unix with a long TMPDIR: %v", err)
	}
	defer ln.Close()
	if p := ln.Addr().String(); len(p) > MaxUnixPath || !strings.HasPrefix(p, "/tmp/") {
		t.Errorf("socket at %q, want a short path under /tmp", p)
	}
}

func TestUnixRejectsALongExplicitDir(t *testing.T) {
	testutil.NotOnWindows(t, "unix sockets: Windows plugins listen on loopback TCP")
	long := filepath.Join(testutil.TempDir(t), strings.Repeat("d", 90))
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Unix(UnixConfig{Dir: long})
	var pe *PathTooLongError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "PLUGIN_UNIX_SOCKET_DIR") {
		t.Fatalf("err = %v, want a *PathTooLongError that says what to set", err)
	}
	entries, _ := os.ReadDir(long)
	if len(entries) != 0 {
		t.Errorf("left %d entries behind in %s", len(entries), long)
	}
}

func TestTCPStaysInRange(t *testing.T) {
	first, err := TCP(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	port := first.Addr().(*net.TCPAddr).Port
	// The first port is taken, so the listener must take a later one.
	ln, err := TCP(port, port+50)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := ln.Addr().(*net.TCPAddr).Port; got <= port || got > port+50 {
		t.Errorf("port %d, want one in %d..%d", got, port+1, port+50)
	}
	if _, err := TCP(port, port); err == nil || !strings.Contains(err.Error(), "no free TCP port") {
		t.Errorf("TCP on a taken single-port range: %v", err)
	}
}
