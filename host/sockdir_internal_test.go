//go:build unix

package host

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSweepSparesLiveHost: the attack the socket directories' lock guards
// against is a sweep (another host's, at its first start) removing the
// directory of a plugin whose host lives, which would take its socket
// and its brokered servers' away. All of a host's plugin directories
// share one lock: a sweep must leave every one of them while the host
// has any, also after one of them is removed; it must remove a dead
// host's directory (its lock free); and the host's directory goes with
// its last plugin.
func TestSweepSparesLiveHost(t *testing.T) {
	base := t.TempDir()
	dead := filepath.Join(base, hostDirPrefix+"dead")
	if err := os.MkdirAll(filepath.Join(dead, hostDirPrefix+"1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, ownerFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := newSockDir(base) // sweeps base first, once per process
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead host's directory %s was not swept (%v)", dead, err)
	}
	b, err := newSockDir(base)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(a.path) != filepath.Dir(b.path) {
		t.Fatalf("two plugins of one host in %s and %s: want one host directory", a.path, b.path)
	}
	a.remove()
	a.remove() // once: b's count stays
	if n := sweepDeadHostDirs(base); n != 0 {
		t.Errorf("a sweep removed %d directories of a live host", n)
	}
	if _, err := os.Stat(b.path); err != nil {
		t.Errorf("the live plugin's directory is gone after a sweep: %v", err)
	}
	if _, err := os.Stat(a.path); !os.IsNotExist(err) {
		t.Errorf("the removed plugin's directory %s is still there (%v)", a.path, err)
	}
	b.remove()
	left, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d entries left in %s after the host's last plugin directory was removed, want none", len(left), base)
	}
}
