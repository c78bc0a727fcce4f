package manager_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// countingSource is a Source of one's own: it wraps another and counts
// what the Manager asks of it.
type countingSource struct {
	manager.Source
	finds, connects atomic.Int64
}

func (s *countingSource) Find(ctx context.Context) ([]manager.Entry, error) {
	s.finds.Add(1)
	return s.Source.Find(ctx)
}

func (s *countingSource) Connect(ctx context.Context, e manager.Entry) (*host.Client, error) {
	s.connects.Add(1)
	return s.Source.Connect(ctx, e)
}

// TestSourcesInOrder checks that the registry takes a (kind, name) from
// the earlier source in Config.Sources, whatever the directories' names,
// and that a plugin is started through the Source that found it.
func TestSourcesInOrder(t *testing.T) {
	t.Parallel()
	early, late := testutil.TempDir(t), testutil.TempDir(t)
	win := writePlugin(t, late, "a", "x 1,2")
	writePlugin(t, early, "b", "x 1")
	writePlugin(t, early, "c", "y 1")
	f := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	first := &countingSource{Source: f.Files(win)}
	second := &countingSource{Source: f.Dirs(early)}
	m := newManager(t, manager.Config{Sources: []manager.Source{first, second}})
	if first.finds.Load() != 1 || second.finds.Load() != 1 {
		t.Fatalf("Discover asked the sources %d and %d times, want once each", first.finds.Load(), second.finds.Load())
	}
	im, err := m.Lookup("objectstore", "x")
	if err != nil || im.Path != win || im.Origin != manager.OriginDir {
		t.Fatalf("Lookup x = %+v, %v; want %s from the first source", im, err, win)
	}
	if p := m.Problems(); len(p) != 1 || !strings.Contains(p[0], "using "+win) {
		t.Errorf("problems = %q, want the duplicate x resolved for %s", p, win)
	}
	cx, info := store(t, m, "x")
	if info.Path != win || info.Major != 2 {
		t.Errorf("dispensed %+v, want major 2 of %s", info, win)
	}
	cy, info := store(t, m, "y")
	if info.Major != 1 {
		t.Errorf("dispensed %+v, want major 1 of y", info)
	}
	if _, err := objectstorev2.NewObjectStoreClient(cx).Init(ctxT(t), &objectstorev2.InitRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := objectstorev1.NewObjectStoreClient(cy).Init(ctxT(t), &objectstorev1.InitRequest{}); err != nil {
		t.Fatal(err)
	}
	if first.connects.Load() != 1 || second.connects.Load() != 1 {
		t.Errorf("the sources connected %d and %d times, want once each (each plugin through its own source)", first.connects.Load(), second.connects.Load())
	}
}

// TestNoSources checks Discover's error for a Config without Sources.
func TestNoSources(t *testing.T) {
	t.Parallel()
	m := manager.New(manager.Config{})
	defer m.Close()
	err := m.Discover(ctxT(t))
	if err == nil || !strings.Contains(err.Error(), "Finder.Dirs") {
		t.Fatalf("Discover without sources = %v, want an error naming Finder.Dirs", err)
	}
}

// TestKeepDescribed checks that with Finder.KeepDescribed the process
// that answered Describe serves the plugin's first use, and that one kept
// but never used is stopped by Close; without it, each plugin starts twice.
func TestKeepDescribed(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "a", "a 2")
	writePlugin(t, dir, "b", "b 2")
	for _, keep := range []bool{true, false} {
		runner := &launchRecorder{}
		finder := &manager.Finder{Launch: host.Command{Cookie: cookie, Runner: runner}, KeepDescribed: keep}
		m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
		conn, _ := store(t, m, "a")
		initStore(t, conn, nil)
		pid := conn.Pid()
		want := int64(3) // Describe a and b, then a again for use
		if keep {
			want = 2
		}
		if finder.Launches() != want {
			t.Errorf("KeepDescribed %v: %d launches, want %d", keep, finder.Launches(), want)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if pid <= 0 {
			t.Fatalf("KeepDescribed %v: the plugin in use has pid %d", keep, pid)
		}
		runner.mu.Lock()
		for i, cmd := range runner.cmds {
			if cmd.ProcessState == nil {
				t.Errorf("KeepDescribed %v: launch %d (pid %d) still runs after Close", keep, i, cmd.Process.Pid)
			}
		}
		runner.mu.Unlock()
	}
}

// TestDiscoverAfterClose: a Discover of a closed Manager returns
// ErrClosed and leaves no process running, though its Finder keeps the
// processes it describes with (KeepDescribed).
func TestDiscoverAfterClose(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "a", "a 2")
	runner := &launchRecorder{}
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie, Runner: runner}, KeepDescribed: true}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Discover(ctxT(t)); !errors.Is(err, manager.ErrClosed) {
		t.Errorf("Discover after Close: %v, want ErrClosed", err)
	}
	runner.mu.Lock()
	defer runner.mu.Unlock()
	if len(runner.cmds) != 1 {
		t.Fatalf("%d launches, want 1 (the Describe)", len(runner.cmds))
	}
	if runner.cmds[0].ProcessState == nil {
		t.Errorf("the process kept from Describe (pid %d) still runs after Discover returned", runner.cmds[0].Process.Pid)
	}
}

// launchRecorder is a host.Runner that records the command of every
// launch, so that a test can see which processes still run.
type launchRecorder struct {
	mu   sync.Mutex
	cmds []*exec.Cmd
}

func (r *launchRecorder) Prepare(l *host.Launch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cmds = append(r.cmds, l.Cmd)
	return nil
}
