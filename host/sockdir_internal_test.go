//go:build unix

package host

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSweepSparesLiveHost: the attack the socket directories' locks guard
// against is a sweep (another host's, at its first start) removing the
// directory of a plugin whose host lives, which would take its socket and
// its brokered servers' away. A sweep must leave a live host's
// directories, also after another of them was removed, and remove a dead
// host's (its lock free), whether its lock is a file or a named pipe
// (Linux: the plugin's stdout, ownerFIFO), which the sweep must open
// without waiting for a writer.
func TestSweepSparesLiveHost(t *testing.T) {
	base := t.TempDir()
	dead := filepath.Join(base, hostDirPrefix+"dead")
	if err := os.MkdirAll(filepath.Join(dead, "plugkit-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, ownerFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadFIFO := filepath.Join(base, hostDirPrefix+"deadfifo")
	if err := os.MkdirAll(filepath.Join(deadFIFO, "plugkit-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(deadFIFO, ownerFile), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := newSockDir(base) // sweeps base first, once per process
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dead, deadFIFO} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the dead host's directory %s was not swept (%v)", d, err)
		}
	}
	b, err := newSockDir(base)
	if err != nil {
		t.Fatal(err)
	}
	a.remove()
	if n := sweepDeadHostDirs(base); n != 0 {
		t.Errorf("a sweep removed %d directories of a live host", n)
	}
	if _, err := os.Stat(b.path); err != nil {
		t.Errorf("the live plugin's directory is gone after a sweep: %v", err)
	}
	b.remove()
	left, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d entries left in %s after every plugin directory was removed, want none", len(left), base)
	}
}

// TestSweepOpensNoPlantedLink: a plugin may write in its socket
// directory, so it can replace `.owner` with a symbolic link to any file.
// Once its host is gone, the next host's sweep opened that name for
// reading and writing, following the link: a root host would open what
// the plugin chose (a device whose open acts, such as a watchdog, or a
// named pipe another program waits on). Here the link leads to a named
// pipe with a reader waiting: an open through the link wakes it.
func TestSweepOpensNoPlantedLink(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(t.TempDir(), "victim")
	if err := syscall.Mkfifo(outside, 0o600); err != nil {
		t.Fatal(err)
	}
	woke := make(chan struct{})
	go func() {
		f, err := os.OpenFile(outside, os.O_RDONLY, 0) // waits for a writer
		if err == nil {
			f.Close()
		}
		close(woke)
	}()
	dead := filepath.Join(base, hostDirPrefix+"planted")
	if err := os.MkdirAll(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dead, ownerFile)); err != nil {
		t.Fatal(err)
	}
	sweepDeadHostDirs(base)
	select {
	case <-woke:
		t.Fatal("the sweep opened the file a planted .owner link leads to")
	case <-time.After(300 * time.Millisecond):
	}
	// End the waiting reader.
	if f, err := os.OpenFile(outside, os.O_WRONLY, 0); err == nil {
		f.Close()
	}
	<-woke
}
