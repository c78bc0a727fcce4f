//go:build !windows

package manager_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
)

// markedPlugin writes a working plugin at dir/name that first creates
// the file marker: whether it ever ran.
func markedPlugin(t *testing.T, dir, name, marker string) string {
	t.Helper()
	inner := writePlugin(t, t.TempDir(), "inner", "x 1")
	path := filepath.Join(dir, name)
	script := fmt.Sprintf("#!/bin/sh\n: > '%s'\nexec '%s' \"$@\"\n", marker, inner)
	writeFile(t, path, script, 0o755)
	return path
}

// TestDiscoverRefusesUnsafeFiles: the attacks of issue 39 point 1 on a
// file's ownership and mode. A plugin that is world- or group-writable,
// set-user-ID or set-group-ID, owned by another user (or reached through
// a link to such a file), or in a directory others may write without the
// sticky bit, is refused before it runs (its marker is never written),
// with the reason and what to do; a safe plugin beside them is found.
func TestDiscoverRefusesUnsafeFiles(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	type attack struct {
		name string
		make func(t *testing.T) string // the directory to discover
		want string
	}
	chmod := func(t *testing.T, path string, mode os.FileMode) {
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	attacks := []attack{
		{"world-writable", func(t *testing.T) string {
			dir := t.TempDir()
			chmod(t, markedPlugin(t, dir, "p", marker), 0o757)
			return dir
		}, "group- or world-writable"},
		{"group-writable", func(t *testing.T) string {
			dir := t.TempDir()
			chmod(t, markedPlugin(t, dir, "p", marker), 0o775)
			return dir
		}, "group- or world-writable"},
		{"setuid", func(t *testing.T) string {
			dir := t.TempDir()
			chmod(t, markedPlugin(t, dir, "p", marker), 0o755|os.ModeSetuid)
			return dir
		}, "set-user-ID"},
		{"setgid", func(t *testing.T) string {
			dir := t.TempDir()
			chmod(t, markedPlugin(t, dir, "p", marker), 0o755|os.ModeSetgid)
			return dir
		}, "set-user-ID or set-group-ID"},
		{"directory world-writable", func(t *testing.T) string {
			dir := t.TempDir()
			markedPlugin(t, dir, "p", marker)
			chmod(t, dir, 0o777)
			return dir
		}, "its directory"},
	}
	if os.Geteuid() == 0 {
		foreign := func(t *testing.T) string {
			p := markedPlugin(t, t.TempDir(), "p", marker)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return p
		}
		attacks = append(attacks,
			attack{"owned by another user", func(t *testing.T) string { return filepath.Dir(foreign(t)) }, "owned by uid 65534"},
			attack{"link to a file another user owns", func(t *testing.T) string {
				dir := t.TempDir()
				if err := os.Symlink(foreign(t), filepath.Join(dir, "p")); err != nil {
					t.Fatal(err)
				}
				return dir
			}, "owned by uid 65534"})
	} else {
		t.Log("not root: the attacks of files another user owns are run by TestDiscoverRefusesUnsafeFiles as root")
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			os.Remove(marker) // each attack's own run
			dir := a.make(t)
			finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
			m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
			discoverWithinDeadline(t, m)
			defer m.Close()
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("the %s plugin ran", a.name)
			}
			entries := m.Entries()
			if len(entries) != 1 || entries[0].Err == nil {
				t.Fatalf("entries %v, want the one plugin refused", entries)
			}
			msg := entries[0].Err.Error()
			for _, w := range []string{"refused", a.want} {
				if !strings.Contains(msg, w) {
					t.Errorf("reason %q lacks %q", msg, w)
				}
			}
			if finder.Launches() != 0 {
				t.Errorf("%d launches, want none", finder.Launches())
			}
		})
	}
	t.Run("safe", func(t *testing.T) {
		dir := t.TempDir()
		markedPlugin(t, dir, "p", marker)
		finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
		m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
		discoverWithinDeadline(t, m)
		defer m.Close()
		if _, err := m.Lookup("objectstore", "x"); err != nil {
			t.Errorf("the safe plugin: %v", err)
		}
	})
}

// TestDirsRunOnlyNamedPlugins: the attack of issue 39 point 1 on a
// directory like /bin. With Finder.Names, ordinary programs beside the
// plugins (each would write a file if run) are never started: only the
// file whose name matches is described and found. A bad pattern is an
// error that says what to write.
func TestDirsRunOnlyNamedPlugins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ran := t.TempDir()
	for _, name := range []string{"ls", "rm", "sh-tool", "plugkit"} {
		script := fmt.Sprintf("#!/bin/sh\n: > '%s'\n", filepath.Join(ran, name))
		writeFile(t, filepath.Join(dir, name), script, 0o755)
	}
	writePlugin(t, dir, "plugkit-x", "x 1")
	var log bytes.Buffer
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, Names: "plugkit-*", Host: host.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	discoverWithinDeadline(t, m)
	defer m.Close()
	if left, _ := os.ReadDir(ran); len(left) != 0 {
		t.Errorf("%d programs that are not plugins ran: %v", len(left), left)
	}
	if _, err := m.Lookup("objectstore", "x"); err != nil {
		t.Errorf("the plugin named plugkit-x: %v", err)
	}
	if !strings.Contains(log.String(), "skipped=4") || !strings.Contains(log.String(), "were not run") {
		t.Errorf("no log line counts the 4 files skipped:\n%s", log.String())
	}
	if n := len(m.Entries()); n != 1 || finder.Launches() != 1 {
		t.Errorf("%d entries and %d launches, want 1 and 1", n, finder.Launches())
	}

	bad := &manager.Finder{Launch: host.Command{Cookie: cookie}, Names: "plugkit-["}
	if _, err := bad.Dirs(dir).Find(t.Context()); err == nil || !strings.Contains(err.Error(), "filepath.Match pattern") {
		t.Errorf("Find with a bad pattern: %v, want the pattern's error", err)
	}
}
