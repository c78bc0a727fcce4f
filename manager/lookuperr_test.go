package manager_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// TestLookupAfterFailedDiscover: after Discover failed (a plugin
// directory that is not there), Lookup's error starts with that failure,
// not with "Discover has not run".
func TestLookupAfterFailedDiscover(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(testutil.TempDir(t), "bin")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(missing)}})
	t.Cleanup(func() { m.Close() })
	if err := m.Discover(ctxT(t)); err == nil {
		t.Fatal("Discover of a missing directory succeeded")
	}
	_, err := m.Lookup("objectstore", "x")
	if err == nil || !strings.HasPrefix(err.Error(), "the last Discover failed: ") || !strings.Contains(err.Error(), missing) || strings.Contains(err.Error(), "has not run") {
		t.Errorf("Lookup after a failed Discover: %v; want it to start with Discover's failure, naming %s", err, missing)
	}
	if err := os.Mkdir(missing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.Discover(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Lookup("objectstore", "x"); err == nil || strings.Contains(err.Error(), "Discover failed") {
		t.Errorf("Lookup after a Discover that succeeded: %v; want no word of the earlier failure", err)
	}
}

// TestLookupWrongCookieFirst: with a wrong cookie, Discover succeeds
// (the plugin is listed as unusable), and Lookup's error starts with the
// plugins that could not be used and why, before where it searched.
func TestLookupWrongCookieFirst(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	typo := writePlugin(t, dir, "typo", "wrongcookie")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	_, err := m.Lookup("objectstore", "typo")
	if err == nil {
		t.Fatal("Lookup found a plugin with the wrong cookie")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "1 plugin found could not be used") || !strings.Contains(strings.SplitN(msg, "\n", 3)[1], typo+": ") || !strings.Contains(msg, "cookie") {
		t.Errorf("Lookup error:\n%s\nwant it to start with the unusable plugin %s and its cookie error", msg, typo)
	}
}
