//go:build unix

package manager_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// loadWorkers and loadPause bound the load of TestUpgradeUnderLoad:
// loadPause is how long each release takes the load before the next
// upgrade begins (about 700 calls on a loaded machine), and the load
// lasts until the last upgrade ends.
const (
	loadWorkers = 8
	loadPause   = 500 * time.Millisecond
)

// failure is a call of the load that failed, and when it started.
type failure struct {
	at  time.Time
	err error
}

// TestUpgradeUnderLoad: 8 workers make unary calls and streams (some
// spanning the switches) while the plugin is upgraded three times, the second time to a release that crashes at its first call.
// The only calls allowed to fail are those in flight on the crashing
// release, between its switch and its rollback: at most one per worker
// (each has one call in flight at a time, and the first failure waits
// for the crash to be seen, after which calls go back to the old
// release). Every older process is gone after its drain, and nothing
// leaks: goroutines, fds, sockets.
func TestUpgradeUnderLoad(t *testing.T) {
	// The host's descriptors that last as long as its process (made at
	// its first plugin's start) are opened before the count: a plugin is
	// started and stopped first. Counted before them, the test failed when
	// run on its own (-run), with nothing leaked.
	warm := newManager(t, manager.Config{Sources: []manager.Source{(&manager.Finder{Launch: host.Command{Cookie: cookie}}).Dirs(filepath.Dir(writePlugin(t, testutil.TempDir(t), "p", "p 2")))}})
	store(t, warm, "p")
	warm.Close()
	fdsBefore := openFDs(t)
	keep := goleak.IgnoreCurrent()
	dir := testutil.TempDir(t)
	m, _, ev := upgradeManager(t, dir, "p 2 v=1.0.0", manager.UpgradePolicy{Drain: 5 * time.Second, Probation: 1500 * time.Millisecond})
	conn, _ := store(t, m, "p")
	cl := initStore(t, conn, map[string]string{"bucket": "b1"})
	if _, err := version(ctxT(t), cl, versionKey); err != nil {
		t.Fatal(err)
	}
	pids := map[int]bool{conn.Pid(): true}

	var mu sync.Mutex
	var failures []failure
	calls := make([]int, loadWorkers)
	stop := make(chan struct{}) // closed when the upgrades have ended
	loadStart := time.Now()
	var wg sync.WaitGroup
	for w := range loadWorkers {
		wg.Go(func() {
			for !closed(stop) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				began := time.Now()
				var err error
				switch {
				case w < 4:
					_, err = cl.Exists(ctx, &objectstorev2.ExistsRequest{Key: "k"})
				case w < 6:
					_, err = version(ctx, cl, versionKey)
				default:
					_, err = version(ctx, cl, sleepKey+"300ms") // spans switches
				}
				cancel()
				calls[w]++
				if err != nil {
					mu.Lock()
					failures = append(failures, failure{began, err})
					mu.Unlock()
				}
			}
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var results []manager.UpgradeResult
	var crashFrom, crashTo time.Time
	for i, mode := range []string{"p 2 v=2.0.0", "p 2 v=3.0.0 crash", "p 2 v=4.0.0"} {
		time.Sleep(loadPause)
		writePlugin(t, dir, "p", mode)
		begun := time.Now()
		var res manager.UpgradeResult
		if i == 0 {
			res, _ = m.Upgrade(ctx, "objectstore", "p")
		} else {
			rs, err := m.Refresh(ctx)
			if err != nil || len(rs) != 1 {
				t.Fatalf("Refresh to %s: %+v, %v", mode, rs, err)
			}
			res = rs[0]
		}
		if strings.Contains(mode, "crash") {
			crashFrom, crashTo = begun, time.Now()
		}
		results = append(results, res)
		pids[res.From.Pid], pids[res.To.Pid] = true, true
	}
	time.Sleep(loadPause) // the last release takes the load too
	close(stop)
	wg.Wait()

	want := []manager.Outcome{manager.UpgradeCompleted, manager.UpgradeRolledBack, manager.UpgradeCompleted}
	for i, res := range results {
		if res.Outcome != want[i] {
			t.Errorf("upgrade %d: %s (%v), want %s", i+1, res.Outcome, res.Cause, want[i])
		}
	}
	if v, err := version(ctxT(t), cl, versionKey); err != nil || v != "4.0.0" {
		t.Errorf("after the upgrades: version %q, %v; want 4.0.0", v, err)
	}
	if got := config(t, cl); got != "map[bucket:b1]" {
		t.Errorf("the last release has config %q: Init was not replayed", got)
	}
	total := 0
	for _, n := range calls {
		total += n
	}
	t.Logf("%d calls by %d workers in %v; %d failed; upgrades switched after %v, %v, %v and took %v, %v (rolled back), %v",
		total, loadWorkers, time.Since(loadStart).Round(time.Millisecond), len(failures), results[0].Switch, results[1].Switch, results[2].Switch, results[0].Took, results[1].Took, results[2].Took)
	for i, res := range results {
		if res.Switch <= 0 || res.Switch > res.Took {
			t.Errorf("upgrade %d switched after %v and took %v", i+1, res.Switch, res.Took)
		}
	}
	if len(failures) > loadWorkers {
		t.Errorf("%d calls failed, more than one per worker", len(failures))
	}
	for _, f := range failures {
		if f.at.Before(crashFrom) || f.at.After(crashTo) {
			t.Errorf("a call started at %v failed, outside the crashing release's window (%v to %v): %v", f.at.Format(time.StampMicro), crashFrom.Format(time.StampMicro), crashTo.Format(time.StampMicro), f.err)
		}
	}
	final := conn.Pid()
	for pid := range pids {
		if pid != 0 && pid != final && testutil.Running(pid) {
			t.Errorf("process %d of an older release still runs after its drain", pid)
		}
	}
	got := strings.Join(ev.types(), ", ")
	wantEvents := "upgrade started, upgrade switched, upgrade completed, upgrade started, upgrade switched, upgrade rolled back, upgrade started, upgrade switched, upgrade completed"
	if got != wantEvents {
		t.Errorf("events:\n%s\nwant\n%s", got, wantEvents)
	}
	if n := testutil.Listeners(t, os.Getpid()); n != 0 {
		t.Errorf("%d listening sockets in the host", n)
	}
	m.Close()
	if err := goleak.Find(keep, goleak.IgnoreTopFunction("github.com/plugkit/plugkit/host.spawner")); err != nil {
		t.Error(err)
	}
	if after := openFDs(t); after > fdsBefore {
		t.Errorf("%d fds open after Close, %d before the test", after, fdsBefore)
	}
}

// closed says whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// openFDs counts the host's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/dev/fd")
	if err != nil {
		t.Skipf("cannot count fds here: %v", err)
	}
	return len(ents)
}

// TestUpgradeRollsBackAHungRelease: a new process that stops answering
// its health checks on probation (stopped with SIGSTOP) is rolled back;
// calls go back to the old process.
func TestUpgradeRollsBackAHungRelease(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	m, _, ev := upgradeManager(t, dir, "p 2 v=1.0.0", manager.UpgradePolicy{Probation: 20 * time.Second, Drain: 2 * time.Second})
	_, cl, oldPid := running(t, m, "p")
	writePlugin(t, dir, "p", "p 2 v=2.0.0")
	done := switched(t, m, ev)
	st := m.Status()
	if len(st) != 1 || st[0].Serving.Version != "2.0.0" || st[0].Probation.IsZero() {
		t.Fatalf("status after the switch: %+v; want 2.0.0 serving on probation", st)
	}
	newPid := st[0].Serving.Pid
	if err := syscall.Kill(newPid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(newPid, syscall.SIGCONT)
	res := <-done
	if res.Outcome != manager.UpgradeRolledBack || res.Cause == nil || !strings.Contains(res.Cause.Error(), "health checks in a row") {
		t.Fatalf("result %+v; want rolled back for failed health checks", res)
	}
	if v, err := version(ctxT(t), cl, versionKey); err != nil || v != "1.0.0" {
		t.Errorf("after the rollback: version %q, %v; want 1.0.0 (pid %d)", v, err, oldPid)
	}
}
