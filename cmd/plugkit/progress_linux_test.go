package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestInstallProgress: plugkit install draws a progress bar, redrawn in
// place, for a download of several MiB when its messages go to a
// terminal (a pty the test makes), and writes no bar, no carriage return,
// when they go to a pipe, as in a log (issue 39 point 5).
func TestInstallProgress(t *testing.T) {
	registry, work, keyFile, pubFile := releaseWork(t)
	src := registry + "/plugins/objectstore"
	const cookie = "PLUGKIT_EXAMPLE_PLUGIN=objectstore"
	dist := filepath.Join(work, "dist")
	bin := goBuild(t, filepath.Join(dist, runtime.GOOS+"_"+runtime.GOARCH), "objectstore-memory", "../../examples/objectstore/plugins/memory")
	if fi, err := os.Stat(bin); err != nil || fi.Size() < progressMin {
		t.Fatalf("the plugin must be over %d bytes for a bar: %v %v", progressMin, fi.Size(), err)
	}
	mustRun(t, 0, "release", "push", dist, "--ref", src+":1.3.0", "--key", keyFile, "--cookie", cookie, "--plain-http")
	install := func(stderr *os.File) {
		t.Helper()
		var stdout strings.Builder
		args := []string{"install", src, "--kind", "objectstore", "--majors", "1", "--dir", testutil.TempDir(t), "--key", pubFile, "--cookie", cookie, "--plain-http"}
		if code := run(args, &stdout, stderr); code != 0 {
			t.Fatalf("install: exit %d: %s", code, stdout.String())
		}
	}

	master, tty := testutil.OpenPTY(t)
	onTerminal := readAll(t, master, func() { install(tty); tty.Close() })
	if !strings.Contains(onTerminal, "\rdownloading objectstore-memory [") || !strings.Contains(onTerminal, "[##############################] ") || !strings.Contains(onTerminal, " 100%") {
		t.Errorf("on a terminal, install drew no progress bar reaching 100%%: %q", onTerminal)
	}
	if n := strings.Count(onTerminal, "\rdownloading"); n < 3 {
		t.Errorf("the bar was drawn %d times, want it redrawn as the download ran: %q", n, onTerminal)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	inLog := readAll(t, r, func() { install(w); w.Close() })
	if strings.Contains(inLog, "\r") || strings.Contains(inLog, "downloading") {
		t.Errorf("to a pipe, install wrote a progress bar: %q", inLog)
	}
}

// readAll runs do while it reads r to its end (a pty's master reads an
// error once its terminal is closed), within a deadline.
func readAll(t *testing.T, r io.Reader, do func()) string {
	t.Helper()
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(&buf, r)
	}()
	do()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the output did not end a minute after install returned")
	}
	return buf.String()
}
