package manager_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/describe"
	"github.com/plugkit/plugkit/examples/objectstore"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// The attacks of a file replaced under a plugin the manager already
// described: every start of it other than an upgrade's (a restart after
// a crash, a kill, the memory limit's kill or a hang's; the first start
// after Discover; the launch that describes it) must run the bytes whose
// SHA-256 its release was described with, or nothing.

// restartRefused wants err to be the refusal of a start of "p" from a
// file that changed since it was described.
func restartRefused(t *testing.T, v string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("the call answered (release %q): the file now on disk ran under the old release's description", v)
	}
	for _, want := range []string{"its file changed since its release was described", "Manager.Refresh", "put the described file back"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("call failed with %v; want an error saying %q", err, want)
		}
	}
	if ce := (*host.ChecksumError)(nil); !errors.As(err, &ce) || strings.Contains(err.Error(), "pinned") {
		t.Errorf("call failed with %v; want a *host.ChecksumError, in words that speak of no pin", err)
	}
}

// TestRestartRunsOnlyTheDescribedFile: a plugin whose binary was
// replaced on disk (same size; in place or with its modification time
// restored) and whose process is then killed (as a crash, the OOM
// killer, the sandbox's memory limit or a hang's kill end it) is not
// restarted from the file now there: calls fail at once, saying what
// changed and what to do, an EventRestartRefused says so, nothing is
// launched; the file put back serves again; and Refresh takes the new
// file through an upgrade's checks, even when the describe cache could
// vouch for its size and modification time.
func TestRestartRunsOnlyTheDescribedFile(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	for _, restoreMtime := range []bool{false, true} {
		name := "rewritten"
		if restoreMtime {
			name = "mtime restored"
		}
		t.Run(name, func(t *testing.T) {
			dir := testutil.TempDir(t)
			m, finder, ev := upgradeManager(t, dir, "p 2 v=1.0.0", manager.UpgradePolicy{Probation: 100 * time.Millisecond})
			conn, cl, pid := running(t, m, "p")
			path := filepath.Join(dir, "p")
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			replace := func(mode string) {
				t.Helper()
				writePlugin(t, dir, "p", mode)
				if restoreMtime {
					if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
						t.Fatal(err)
					}
				}
			}
			replace("p 2 v=6.6.6") // the same size as the described file
			launches := finder.Launches()
			testutil.Kill(pid)
			waitExited(t, conn)

			v, err := version(ctxT(t), cl, versionKey)
			restartRefused(t, v, err)
			if e := ev.wait(t, manager.EventRestartRefused); e.Cause == nil || !strings.Contains(e.Cause.Error(), fileSum(t, path)) {
				t.Errorf("restart refused event with cause %v; want it naming the file's SHA-256 now", e.Cause)
			}
			v, err = version(ctxT(t), cl, versionKey) // at once: the refusal holds for a while
			restartRefused(t, v, err)
			if n := finder.Launches(); n != launches {
				t.Errorf("%d launches after the file was replaced; want none", n-launches)
			}

			// The described file back: the next look at it restarts it.
			replace("p 2 v=1.0.0")
			deadline := time.Now().Add(20 * time.Second)
			for {
				v, err = version(ctxT(t), cl, versionKey)
				if err == nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err != nil || v != "1.0.0" {
				t.Fatalf("with the described file back: %q, %v; want 1.0.0 restarted", v, err)
			}

			// Replaced again and killed: Refresh takes it through an
			// upgrade's checks.
			replace("p 2 v=6.6.6")
			testutil.Kill(conn.Pid())
			waitExited(t, conn)
			v, err = version(ctxT(t), cl, versionKey)
			restartRefused(t, v, err)
			res, err := m.Refresh(ctxT(t))
			if err != nil || len(res) != 1 || res[0].Outcome != manager.UpgradeCompleted || res[0].To.Version != "6.6.6" {
				t.Fatalf("Refresh: %+v, %v; want one upgrade to 6.6.6, completed", res, err)
			}
			if v, err := version(ctxT(t), cl, versionKey); err != nil || v != "6.6.6" {
				t.Errorf("after Refresh: %q, %v; want 6.6.6 serving", v, err)
			}
		})
	}
}

// TestFirstStartRunsOnlyTheDescribedFile: a binary replaced after
// Discover described it, before its first use, is not started under the
// description of another.
func TestFirstStartRunsOnlyTheDescribedFile(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "its plugin's file is rewritten in place; under Wine every restart of TestCallsRacingRestarts runs the same check")
	dir := testutil.TempDir(t)
	m, finder, ev := upgradeManager(t, dir, "p 2 v=1.0.0", manager.UpgradePolicy{})
	writePlugin(t, dir, "p", "p 2 v=6.6.6")
	launches := finder.Launches()
	conn, info := store(t, m, "p")
	v, err := version(ctxT(t), objectstorev2.NewObjectStoreClient(conn), versionKey)
	restartRefused(t, v, err)
	if !strings.Contains(err.Error(), "had not started yet") {
		t.Errorf("error %v; want it saying the plugin had not started yet", err)
	}
	ev.wait(t, manager.EventRestartRefused)
	if n := finder.Launches(); n != launches || info.PluginVersion != "1.0.0" {
		t.Errorf("%d launches of v%s's replaced file; want none", n-launches, info.PluginVersion)
	}
}

// TestDescribeRunsOnlyTheHashedFile: a binary replaced after Describe
// hashed it, before the launch that describes it, is not run: neither
// its description nor its process (kept for the first use under
// KeepDescribed) may stand for the bytes hashed.
func TestDescribeRunsOnlyTheHashedFile(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "its plugin's file is rewritten in place; under Wine every restart of TestCallsRacingRestarts runs the same check")
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "described and stopped", true: "KeepDescribed"}[keep], func(t *testing.T) {
			dir := testutil.TempDir(t)
			path := writePlugin(t, dir, "p", "p 2 v=1.0.0")
			hashed := fileSum(t, path)
			finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, KeepDescribed: keep}
			manager.SetLaunchHook(finder, func(string) { writePlugin(t, dir, "p", "p 2 v=6.6.6") })
			entries := finder.Describe(ctxT(t), []string{path})
			e := entries[0]
			if c, ok := e.Value.(interface{ Close() error }); ok {
				defer c.Close()
			}
			if e.Err == nil {
				t.Fatalf("described v%s with SHA-256 %s (the file hashed: %s); want the launch refused, the file having changed since it was hashed",
					e.Description.GetPluginVersion(), e.SHA256, map[bool]string{true: "the same", false: "another"}[e.SHA256 == hashed])
			}
			if !strings.Contains(e.Err.Error(), "changed after Discover found its SHA-256") || !strings.Contains(e.Err.Error(), "run Discover again") {
				t.Errorf("error %v; want it saying the file changed after it was hashed, and what to do", e.Err)
			}
		})
	}
}

// TestRestartRunsOnlyTheDescribedModule: a WebAssembly guest whose
// module was replaced on disk (renamed over, as plugkit install does)
// and which then dies (here at its memory limit) is not instantiated
// again from the module now there.
func TestRestartRunsOnlyTheDescribedModule(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := testutil.TempDir(t)
	guests, install := memoryReleases(ctx, t, dir) // guests of 32 MiB (guestMemory)
	install("1.3.0")
	ev := newEvents()
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}, Guests: guests}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Telemetry: host.Telemetry{OnEvent: ev.on}})
	conn, info := store(t, m, "example.com/memory")
	cl := objectstorev1.NewObjectStoreClient(conn)
	if _, err := cl.Exists(ctx, &objectstorev1.ExistsRequest{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	install("1.4.0")
	// A Put larger than the guest's memory ends it.
	put, err := cl.Put(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = put.Send(&objectstorev1.PutRequest{Part: &objectstorev1.PutRequest_Key{Key: "big"}})
	chunk := make([]byte, 1<<20)
	for i := 0; err == nil && i < 64; i++ {
		err = put.Send(&objectstorev1.PutRequest{Part: &objectstorev1.PutRequest_Chunk{Chunk: chunk}})
	}
	if _, err := put.CloseAndRecv(); err == nil {
		t.Fatal("a Put of 64 MiB into a guest of 32 MiB succeeded")
	}
	d, err := describe.Conn(ctx, conn)
	if err == nil {
		t.Fatalf("after its death the guest serving as v%s was instantiated from the module now there, v%s", info.PluginVersion, d.GetPluginVersion())
	}
	restartRefused(t, "", err)
	ev.wait(t, manager.EventRestartRefused)
}

// TestRollbackRunsOnlyTheDescribedFile: an upgrade in place (the new
// release written over the old one's file) rolled back when the old
// process is gone does not restart the old release from the file now
// there, the release rolled back.
func TestRollbackRunsOnlyTheDescribedFile(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	// A long probation: the rollback must come from the crash, however
	// loaded the machine.
	m, _, ev := upgradeManager(t, dir, "p 2 v=1.0.0", manager.UpgradePolicy{Probation: time.Minute, Drain: 2 * time.Second})
	_, cl, oldPid := running(t, m, "p")
	writePlugin(t, dir, "p", "p 2 v=2.0.0 crash")
	done := switched(t, m, ev)
	testutil.Kill(oldPid) // the old process, kept to roll back to, dies
	deadline := time.Now().Add(10 * time.Second)
	for oldGone := false; !oldGone; {
		oldGone = true
		for _, st := range m.Status() {
			for _, r := range st.Draining {
				oldGone = oldGone && r.Pid != oldPid
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the old process still running 10 s after SIGKILL")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := version(ctxT(t), cl, versionKey); err == nil {
		t.Fatal("the call that crashes the new release succeeded")
	}
	if res := <-done; res.Outcome != manager.UpgradeRolledBack {
		t.Fatalf("result %+v; want rolled back", res)
	}
	v, err := version(ctxT(t), cl, versionKey)
	restartRefused(t, v, err)
}
