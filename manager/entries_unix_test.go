//go:build !windows

package manager_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
)

// TestDiscoverSkipsHostileEntries: symbolic link loops, dangling links,
// links to a directory or a device, a FIFO and an unreadable directory in a
// plugin directory are each reported with what to do, skipped, and the
// plugins beside them (one reached through a link) are found, within
// Discover's deadline.
func TestDiscoverSkipsHostileEntries(t *testing.T) {
	t.Parallel()
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

	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	discoverWithinDeadline(t, m)
	defer m.Close()
	for _, name := range []string{"x", "y"} {
		if _, err := m.Lookup("objectstore", name); err != nil {
			t.Errorf("Lookup %s beside the hostile entries: %v", name, err)
		}
	}
	reasons := map[string]string{}
	for _, b := range m.Entries() {
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

// TestDiscoverSkipsUnreadableEntries: run as another user (uid 65534), a
// discovery meets a plugin it may not read and a link into a directory it
// may not enter; both are reported with the user and what to do, and the
// readable plugin beside them is found.
func TestDiscoverSkipsUnreadableEntries(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root (uid 0, as CI runs it) to run a discovery as another uid; it runs as uid %d: run it as root", os.Geteuid())
	}
	const nobody = 65534
	root, err := os.MkdirTemp("", "plugkit-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	bin, plugins, closed := filepath.Join(root, "bin"), filepath.Join(root, "plugins"), filepath.Join(root, "closed")
	for dir, mode := range map[string]os.FileMode{root: 0o755, bin: 0o755, plugins: 0o755, closed: 0o700} {
		if err := os.MkdirAll(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	// This test binary, copied where the other user can run it (the
	// build directory is root's alone), serves as the readable plugin.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(bin, "manager.test")
	writeFile(t, self, string(data), 0o755)
	writeFile(t, filepath.Join(plugins, "good"), fmt.Sprintf("#!/bin/sh\n%s='x 1' GORACE=atexit_sleep_ms=0 exec '%s' \"$@\"\n", modeEnv, self), 0o755)
	writeFile(t, filepath.Join(plugins, "unreadable"), "#!/bin/sh\n", 0o711)
	writeFile(t, filepath.Join(closed, "hidden"), "#!/bin/sh\n", 0o755)
	if err := os.Symlink(filepath.Join(closed, "hidden"), filepath.Join(plugins, "shut")); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = []string{discoverEnv + "=" + plugins, "GORACE=atexit_sleep_ms=0", "TMPDIR=" + os.TempDir()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the discovery as uid %d: %v\nstdout: %s\nstderr: %s", nobody, err, out, stderr.String())
	}
	reasons := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, reason, _ := strings.Cut(line, "\t")
		reasons[name] = reason
	}
	if reasons["good"] != "ok" {
		t.Errorf("the readable plugin beside them: %q, want ok (all: %q)", reasons["good"], reasons)
	}
	for name, want := range map[string][]string{
		"unreadable": {"permission denied", "this user (uid 65534) may not read it", "fix its permissions"},
		"shut":       {"symbolic link", "permission denied", "remove it"},
	} {
		for _, w := range want {
			if !strings.Contains(reasons[name], w) {
				t.Errorf("%s: reason %q lacks %q", name, reasons[name], w)
			}
		}
	}
}
