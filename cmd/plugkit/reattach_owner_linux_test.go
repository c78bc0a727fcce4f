package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReattachForeignSocket: --reattach with a PLUGKIT_REATTACH line (as
// from a forged environment) naming a socket of another uid is refused,
// and the user is told whose socket it is and what to do.
func TestReattachForeignSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root (uid 0, as CI runs it) to give the socket to another uid; it runs as uid %d: run it as root", os.Geteuid())
	}
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chown(sock, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	line := `PLUGKIT_REATTACH='{"forged":{"Protocol":"grpc","ProtocolVersion":1,"Pid":0,"Addr":{"Network":"unix","String":"` + sock + `"}}}'`
	var stdout, stderr bytes.Buffer
	code := run([]string{"inspect", "--reattach", line, "--timeout", "5s"}, &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{sock, "belongs to uid 65534", "not this host's user (uid 0)", "refused"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}
