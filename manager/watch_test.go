package manager_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// watchDeadline bounds every wait for a change to be reported: generous,
// for a loaded machine.
const watchDeadline = 30 * time.Second

// watchSource starts the watch of src, stopped at the test's end (and
// waited for: its channel closes).
func watchSource(t *testing.T, src manager.Source) <-chan struct{} {
	t.Helper()
	w, ok := src.(manager.Watcher)
	if !ok {
		t.Fatalf("%T is not a manager.Watcher", src)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := w.Watch(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		waitClosed(t, ch)
	})
	return ch
}

// waitChange waits for a change reported on ch.
func waitChange(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("the watch stopped before reporting %s", what)
		}
	case <-time.After(watchDeadline):
		t.Fatalf("%s was not reported within %v", what, watchDeadline)
	}
}

// quiet says that nothing is reported on ch for a while: a check that
// can pass wrongly on a slow machine (the report may come later), never
// fail wrongly.
func quiet(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s was reported as a change", what)
	case <-time.After(300 * time.Millisecond):
	}
}

// waitClosed waits for the watch's channel to close.
func waitClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	deadline := time.After(watchDeadline)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Errorf("the watch did not stop within %v of its context's end", watchDeadline)
			return
		}
	}
}

// install puts content at dir/name as plugkit install does: written to a
// temporary file whose name starts with a dot, then renamed into place.
func install(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, ".tmp123-"+name)
	writeFile(t, tmp, content, 0o755)
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func TestWatchDirSeesAnInstall(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: filepath.Join(dir, "cache.json"), PollInterval: 50 * time.Millisecond}
	ch := watchSource(t, finder.Dirs(dir))
	writeFile(t, filepath.Join(dir, ".tmp9-plugkit-a"), "half", 0o755)
	writeFile(t, filepath.Join(dir, "cache.json"), "{}", 0o600)
	writeFile(t, filepath.Join(dir, "cache.json.123.tmp"), "{}", 0o600)
	quiet(t, ch, "a file whose name starts with a dot, or the Finder's cache file,")
	install(t, dir, "plugkit-a", "#!/bin/sh\n")
	waitChange(t, ch, "a binary renamed into the directory")
	if err := os.Remove(filepath.Join(dir, "plugkit-a")); err != nil {
		t.Fatal(err)
	}
	waitChange(t, ch, "a binary removed")
}

func TestWatchDirWaitsForAFileToBeClosed(t *testing.T) {
	dir := testutil.TempDir(t)
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	ch := watchSource(t, finder.Dirs(dir))
	// A copy in progress: created and half written, not yet closed.
	half, err := os.OpenFile(filepath.Join(dir, "plugkit-half"), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	if _, err := half.Write([]byte("#!/bin/sh\n# the first half")); err != nil {
		t.Fatal(err)
	}
	// Another binary installed meanwhile: its change waits for the copy,
	// as a refresh would describe the half-written file.
	install(t, dir, "plugkit-b", "#!/bin/sh\n")
	quiet(t, ch, "a change while a binary is half written")
	var closed atomic.Bool
	closed.Store(true)
	if err := half.Close(); err != nil {
		t.Fatal(err)
	}
	waitChange(t, ch, "the binary closed after writing")
	if !closed.Load() {
		t.Fatal("the change was reported before the half-written binary was closed")
	}
}

func TestWatchFilesAndRemotesFile(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	bin := filepath.Join(dir, "plugkit-one")
	writeFile(t, bin, "#!/bin/sh\n", 0o755)
	remotes := filepath.Join(dir, "remotes.json")
	writeFile(t, remotes, `{"remotes": []}`, 0o600)
	files := watchSource(t, finder.Files(bin))
	rf := watchSource(t, finder.RemotesFile(remotes))

	install(t, dir, "plugkit-other", "#!/bin/sh\n")
	quiet(t, files, "a binary Files does not name")
	install(t, dir, "plugkit-one", "#!/bin/sh\n# v2\n")
	waitChange(t, files, "the binary Files names, replaced")

	writeFile(t, remotes, `{"remotes": [{"kind": "objectstore", "name": "x", "endpoints": ["127.0.0.1:1"]}]}`, 0o600)
	waitChange(t, rf, "the remotes file rewritten")

	w, ok := finder.Remotes().(manager.Watcher)
	if !ok {
		t.Fatal("Remotes is not a manager.Watcher")
	}
	if ch, err := w.Watch(context.Background()); ch != nil || err != nil {
		t.Fatalf("Remotes' Watch = %v, %v; want a nil channel (a list never changes by itself)", ch, err)
	}
}

func TestWatchRefusesAMissingDirectory(t *testing.T) {
	t.Parallel()
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	missing := filepath.Join(testutil.TempDir(t), "nope")
	_, err := finder.Dirs(missing).(manager.Watcher).Watch(context.Background())
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Watch of a missing directory = %v; want an error naming it", err)
	}
}

func TestWatchDirRemovedAndMadeAgain(t *testing.T) {
	t.Parallel()
	parent := testutil.TempDir(t)
	dir := filepath.Join(parent, "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, PollInterval: 20 * time.Millisecond}
	ch := watchSource(t, finder.Dirs(dir))
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	waitChange(t, ch, "the plugin directory removed")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	install(t, dir, "plugkit-a", "#!/bin/sh\n")
	waitChange(t, ch, "a binary installed into the directory made again")
}

// startWatch runs m's Watch on a goroutine; the channel gets its error.
func startWatch(ctx context.Context, m *manager.Manager) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.Watch(ctx) }()
	return done
}

// watchEnded waits for Watch to return, and returns its error.
func watchEnded(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(watchDeadline):
		t.Fatalf("Watch did not return within %v", watchDeadline)
		return nil
	}
}

func TestWatchRefreshesAfterAnInstall(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	// The cache file in the watched directory, rewritten by a refresh, is
	// not a change.
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: filepath.Join(dir, "cache.json")}
	refreshed := make(chan error, 16)
	m := newManager(t, manager.Config{
		Sources: []manager.Source{finder.Dirs(dir)},
		Watch:   manager.WatchPolicy{Debounce: 10 * time.Millisecond, OnRefresh: func(_ []manager.UpgradeResult, err error) { refreshed <- err }},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := startWatch(ctx, m)
	waitRefresh := func(what string) {
		t.Helper()
		select {
		case <-refreshed:
		case err := <-done:
			t.Fatalf("Watch returned %v before refreshing %s", err, what)
		case <-time.After(watchDeadline):
			t.Fatalf("no refresh within %v %s", watchDeadline, what)
		}
	}
	waitRefresh("once its watches were in place")
	install(t, dir, "plugkit-a", "#!/bin/sh\n")
	waitRefresh("after an install")
	select {
	case <-refreshed:
		t.Fatal("one install was refreshed twice")
	case <-time.After(300 * time.Millisecond): // can pass wrongly on a slow machine, never fail wrongly
	}
	cancel()
	if err := watchEnded(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch returned %v when its context ended; want context.Canceled", err)
	}
}

func TestWatchStopsWithClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := testutil.TempDir(t)
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	remotes := filepath.Join(dir, "remotes.json")
	writeFile(t, remotes, `{"remotes": []}`, 0o600)
	refreshed := make(chan struct{}, 16)
	m := manager.New(manager.Config{
		Sources: []manager.Source{finder.Dirs(dir), finder.RemotesFile(remotes), finder.Remotes()},
		Watch:   manager.WatchPolicy{Debounce: time.Millisecond, OnRefresh: func([]manager.UpgradeResult, error) { refreshed <- struct{}{} }},
	})
	done := startWatch(context.Background(), m)
	// A second Watch is refused while the first runs (it may not have
	// begun yet: then the first of the two is refused).
	second := startWatch(context.Background(), m)
	var refused error
	select {
	case refused = <-second:
	case refused = <-done:
		done = second
	case <-time.After(watchDeadline):
		t.Fatal("neither of two Watches was refused")
	}
	if refused == nil || !strings.Contains(refused.Error(), "already running") {
		t.Fatalf("a second Watch returned %v; want it refused, as one is running", refused)
	}
	// The first refresh has run: the watch waits for changes when the
	// Manager closes.
	select {
	case <-refreshed:
	case <-time.After(watchDeadline):
		t.Fatalf("no first refresh within %v", watchDeadline)
	}
	m.Close()
	if err := watchEnded(t, done); !errors.Is(err, manager.ErrClosed) {
		t.Fatalf("Watch returned %v when the Manager closed; want manager.ErrClosed", err)
	}
	if err := m.Watch(context.Background()); !errors.Is(err, manager.ErrClosed) {
		t.Fatalf("Watch of a closed Manager = %v; want manager.ErrClosed", err)
	}
}

// TestWatchUpgradesAnInstalledRelease: a new release renamed into a
// watched directory, as plugkit install does, takes over from the
// running one by itself, once.
func TestWatchUpgradesAnInstalledRelease(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it replaces a plugin binary while it runs, which Windows forbids")
	dir, staging := testutil.TempDir(t), testutil.TempDir(t)
	writePlugin(t, dir, "p", "p 2 v=1.0.0")
	results := make(chan []manager.UpgradeResult, 16)
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{
		Sources: []manager.Source{finder.Dirs(dir)},
		Upgrade: manager.UpgradePolicy{Probation: 200 * time.Millisecond},
		Watch: manager.WatchPolicy{Debounce: 20 * time.Millisecond, OnRefresh: func(r []manager.UpgradeResult, err error) {
			if err != nil {
				t.Errorf("refresh: %v", err)
			}
			results <- r
		}},
	})
	conn, _ := store(t, m, "p")
	cl := initStore(t, conn, map[string]string{"bucket": "b1"})
	if v, err := version(ctxT(t), cl, versionKey); err != nil || v != "1.0.0" {
		t.Fatalf("before: version %q, %v", v, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := startWatch(ctx, m)
	defer func() {
		cancel()
		watchEnded(t, done)
	}()
	next := func(what string) []manager.UpgradeResult {
		t.Helper()
		select {
		case r := <-results:
			return r
		case <-time.After(watchDeadline):
			t.Fatalf("no refresh within %v %s", watchDeadline, what)
			return nil
		}
	}
	if r := next("once the watch began"); len(r) != 0 {
		t.Fatalf("the first refresh, with nothing changed, did %+v", r)
	}
	staged := writePlugin(t, staging, "p", "p 2 v=2.0.0")
	if err := os.Rename(staged, filepath.Join(dir, "p")); err != nil {
		t.Fatal(err)
	}
	r := next("after a release was installed")
	if len(r) != 1 || r[0].Outcome != manager.UpgradeCompleted || r[0].From.Version != "1.0.0" || r[0].To.Version != "2.0.0" {
		t.Fatalf("the refresh after the install did %+v; want one upgrade from 1.0.0 to 2.0.0, completed", r)
	}
	if v, err := version(ctxT(t), cl, versionKey); err != nil || v != "2.0.0" {
		t.Errorf("after: version %q, %v; want 2.0.0", v, err)
	}
	select {
	case r := <-results:
		t.Fatalf("one install was refreshed twice: %+v", r)
	case <-time.After(300 * time.Millisecond): // can pass wrongly on a slow machine, never fail wrongly
	}
}
