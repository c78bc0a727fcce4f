//go:build !windows

package manager_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/manager"
)

// TestDiscoverSkipsHostileEntries: symbolic link loops, dangling links,
// links to a directory or a device, a FIFO and an unreadable directory in a
// plugin directory are each reported with what to do, skipped, and the
// plugins beside them (one reached through a link) are found, within
// Discover's deadline.
func TestDiscoverSkipsHostileEntries(t *testing.T) {
	dir := t.TempDir()
	good := writePlugin(t, t.TempDir(), "real", "x 1")
	writePlugin(t, dir, "b", "y 1")
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(good, "a")                            // a plugin through a link
	link(filepath.Join(dir, "loop2"), "loop1") // loop1 -> loop2 -> loop1
	link(filepath.Join(dir, "loop1"), "loop2")
	link("self", "self")
	link(filepath.Join(dir, "nothing"), "dangling")
	link(t.TempDir(), "todir")
	link("/dev/zero", "zero")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "closed"), 0); err != nil {
		t.Fatal(err)
	}

	m := manager.New(manager.Config{Dirs: []string{dir}, Cookie: cookie})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Discover(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Discover: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Discover still running 30 s after its 10 s deadline")
	}
	defer m.Close()
	for _, name := range []string{"x", "y"} {
		if _, err := m.Lookup("objectstore", name); err != nil {
			t.Errorf("Lookup %s beside the hostile entries: %v", name, err)
		}
	}
	reasons := map[string]string{}
	for _, b := range m.Binaries() {
		if b.Err != nil {
			reasons[filepath.Base(b.Path)] = b.Err.Error()
		}
	}
	for name, want := range map[string][]string{
		"loop1":    {"symbolic link", "too many levels of symbolic links", "remove it"},
		"loop2":    {"symbolic link", "too many levels of symbolic links", "remove it"},
		"self":     {"symbolic link", "remove it"},
		"dangling": {"symbolic link", "no such file", "remove it"},
		"todir":    {"not a regular file (a directory)", "move it out"},
		"zero":     {"not a regular file (a device)", "move it out"},
		"fifo":     {"not a regular file (a named pipe (FIFO))", "move it out"},
	} {
		for _, w := range want {
			if !strings.Contains(reasons[name], w) {
				t.Errorf("%s: reason %q lacks %q", name, reasons[name], w)
			}
		}
	}
	if len(reasons) != 7 {
		t.Errorf("%d unusable entries, want 7 (the directory skipped): %q", len(reasons), reasons)
	}
}
