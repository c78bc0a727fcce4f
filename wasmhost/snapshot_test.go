package wasmhost_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/wasmhost"
)

var reactorBuild struct {
	once      sync.Once
	path, alt string // the guest built with -buildmode=c-shared; alt: the same, one data segment a zero byte longer
	err       error
}

// reactorModules builds testdata/guest as a WASI reactor, once, and
// compiles it (and alt) into the tests' cache.
func reactorModules(t *testing.T) (path, alt string) {
	t.Helper()
	buildGuest()
	reactorBuild.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		dir, err := buildDir()
		if err != nil {
			reactorBuild.err = err
			return
		}
		reactorBuild.path = filepath.Join(dir, "reactor", "guest.wasm")
		reactorBuild.alt = filepath.Join(dir, "alt", "guest.wasm")
		os.MkdirAll(filepath.Dir(reactorBuild.path), 0o755)
		os.MkdirAll(filepath.Dir(reactorBuild.alt), 0o755)
		if reactorBuild.err = testutil.BuildWasmReactor(ctx, reactorBuild.path, "./testdata/guest"); reactorBuild.err != nil {
			return
		}
		b, err := os.ReadFile(reactorBuild.path)
		if err != nil {
			reactorBuild.err = err
			return
		}
		// Another module that runs the same, its memory at the start
		// included. It differs in its data alone, so that its data-less
		// form is the reactor's: a custom section (the alt these tests
		// had) is kept in that form, which then cost a compile of its own
		// (seconds of CPU for 22 MB, in every cold run), and no test
		// starts alt from a snapshot.
		alt, ok := wasmhost.WithLongerData(b)
		if !ok {
			reactorBuild.err = errors.New("the reactor has no data segment to make another module of")
			return
		}
		if reactorBuild.err = os.WriteFile(reactorBuild.alt, alt, 0o644); reactorBuild.err != nil {
			return
		}
		// wasmcompile's Compile of a reactor compiles its data-less form
		// too (Runtime.Compile waits for it), which the starts from a
		// snapshot use: the reactor's serves alt's.
		if guestCache != "" {
			testutil.CompiledWasm(ctx, reactorBuild.path, reactorBuild.alt)
		}
	})
	if reactorBuild.err != nil {
		t.Fatal(reactorBuild.err)
	}
	return reactorBuild.path, reactorBuild.alt
}

// reactorRuntime is a Runtime with cfg, whose zero SnapshotBytes keeps
// snapshots (DefaultSnapshotBytes).
func reactorRuntime(t *testing.T, cfg wasmhost.Config) *wasmhost.Runtime {
	rt := wasmhost.New(testConfig(cfg))
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

func mustExist(t *testing.T, c *host.Client, key string) {
	t.Helper()
	if err := exists(c, key); err != nil {
		t.Fatalf("Exists(%q): %v", key, err)
	}
}

// wantRestores checks that rt started want guests from a snapshot since
// it had started base (wasmhost.Restores when the test began: the tests
// share a Runtime where their Configs allow).
func wantRestores(t *testing.T, rt *wasmhost.Runtime, base, want int) {
	t.Helper()
	if got := wasmhost.Restores(rt) - base; got != want {
		t.Fatalf("%d guests started from a snapshot, want %d", got, want)
	}
}

// reactorCommand starts the reactor path with rt, in an environment of
// the test's own: a snapshot is found by the module, arguments and
// environment, so that no other test's snapshot in a shared Runtime is
// this test's (more may be added to Env, none removed).
func reactorCommand(t *testing.T, rt *wasmhost.Runtime, path string) host.Command {
	return host.Command{Path: path, Cookie: testCookie, Runner: rt, Env: []string{"PLUGKIT_TEST_NAME=" + t.Name()}}
}

// sharedReactorRuntime is sharedRuntime, for the snapshot tests of the
// zero Config: it waits for the guests of earlier tests to end, and
// returns the count of its restores so far.
func sharedReactorRuntime(t *testing.T) (rt *wasmhost.Runtime, restores int) {
	rt = sharedRuntime()
	waitEnded(t, rt)
	return rt, wasmhost.Restores(rt)
}

// A reactor's first start runs its init and records it; later ones start
// from the record, with nothing of an earlier guest's life after its
// init (its calls counted afresh), two at once.
func TestSnapshotStart(t *testing.T) {
	path, _ := reactorModules(t)
	rt, base := sharedReactorRuntime(t)
	clean, mapped := wasmhost.CleanRestores(rt), wasmhost.MappedRestores(rt)
	cmd := reactorCommand(t, rt, path)
	c := startGuest(t, cmd)
	mustExist(t, c, "count:1")
	mustExist(t, c, "count:2")
	c.Close()
	wantRestores(t, rt, base, 0)
	a, b := startGuest(t, cmd), startGuest(t, cmd)
	wantRestores(t, rt, base, 2)
	for _, c := range []*host.Client{a, b} {
		mustExist(t, c, "count:1")
		mustExist(t, c, "yes")
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close of a guest started from its snapshot: %v", err)
	}
	// Once the module's data-less form is compiled, starts from the
	// snapshot use it: wazero copies no data segments into their memory.
	deadline := time.Now().Add(2 * time.Minute)
	for !wasmhost.DatalessReady(rt) {
		if time.Now().After(deadline) {
			t.Fatal("the module's data-less form was not compiled within 2 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	c = startGuest(t, cmd)
	if n := wasmhost.CleanRestores(rt) - clean; n != 1 {
		t.Fatalf("%d guests started from the data-less form, want 1", n)
	}
	if n := wasmhost.MappedRestores(rt) - mapped; runtime.GOOS == "linux" && n != 1 {
		t.Fatalf("%d guests started from the snapshot mapped copy-on-write, want 1 (Linux)", n)
	}
	mustExist(t, c, "count:1")
	mustExist(t, c, "yes")
	// What a guest writes to its memory mapped from the snapshot is its
	// own: the next one counts from 1 again.
	d := startGuest(t, cmd)
	mustExist(t, d, "count:1")
	mustExist(t, c, "count:2")
}

// Go reads its environment and arguments in its init: a guest started
// with another environment, or other arguments, than the snapshot's runs
// its own init and sees its own; the next such guest starts from its own
// snapshot.
func TestSnapshotKeyedByEnv(t *testing.T) {
	path, _ := reactorModules(t)
	rt, _ := sharedReactorRuntime(t)
	for _, c := range []struct {
		first, second host.Command
		sees, seesNot string
	}{
		{host.Command{Env: []string{"SNAP_A=1"}}, host.Command{Env: []string{"SNAP_B=1"}}, "env:SNAP_B", "env:SNAP_A"},
		{host.Command{Args: []string{"first"}}, host.Command{Args: []string{"second"}}, "arg:second", "arg:first"},
	} {
		base := wasmhost.Restores(rt)
		for _, cmd := range []*host.Command{&c.first, &c.second} {
			cmd.Path, cmd.Cookie, cmd.Runner = path, testCookie, rt
			cmd.Env = append(cmd.Env, reactorCommand(t, rt, path).Env...)
		}
		startGuest(t, c.first).Close()
		g := startGuest(t, c.second)
		mustExist(t, g, c.sees)
		if err := exists(g, c.seesNot); err == nil {
			t.Fatalf("a guest started to see %s also sees %s, as did another guest's snapshot", c.sees, c.seesNot)
		}
		wantRestores(t, rt, base, 0)
		g.Close()
		g = startGuest(t, c.second)
		wantRestores(t, rt, base, 1)
		mustExist(t, g, c.sees)
	}
}

// A snapshot is the module's own: another module, even one of the same
// name, arguments and environment (a file replaced by one that differs),
// runs its own init.
func TestSnapshotKeyedByModule(t *testing.T) {
	path, alt := reactorModules(t)
	rt, base := sharedReactorRuntime(t)
	startGuest(t, reactorCommand(t, rt, alt)).Close()
	c := startGuest(t, reactorCommand(t, rt, path))
	wantRestores(t, rt, base, 0)
	mustExist(t, c, "yes")
}

// A reactor's init that calls the file system is not recorded, and each
// start runs it: a file it opened (a granted directory itself included)
// is a descriptor of that guest's own, which a guest started from its
// memory would lack, and what it found there may have changed by the next
// start (a file its init stats, removed between two starts).
func TestSnapshotNotAfterInitFileSystem(t *testing.T) {
	path, _ := reactorModules(t)
	dir := testutil.TempDir(t)
	file := filepath.Join(dir, "f")
	// One Runtime for the three: each case's environment is its own
	// snapshot's key, and none may be taken.
	rt := reactorRuntime(t, wasmhost.Config{Dirs: []wasmhost.Dir{{HostPath: dir, GuestPath: "/data"}}})
	for _, c := range []struct{ env, probe string }{
		{"PLUGKIT_GUEST_INIT_OPEN=/data/f", "initfile"},
		{"PLUGKIT_GUEST_INIT_OPEN=/data", "initfile"},
		{"PLUGKIT_GUEST_INIT_STAT=/data/f", "initstat"},
	} {
		if err := os.WriteFile(file, []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := host.Command{Path: path, Cookie: testCookie, Runner: rt, Env: []string{c.env}}
		first := startGuest(t, cmd)
		mustExist(t, first, c.probe)
		first.Close()
		second := startGuest(t, cmd)
		if err := exists(second, c.probe); err != nil {
			t.Errorf("%s: the second guest's %s: %v (started from a snapshot: %v)", c.env, c.probe, err, wasmhost.Restores(rt) > 0)
		}
		second.Close()
		if c.probe == "initstat" {
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
			third := startGuest(t, cmd)
			if err := exists(third, c.probe); err == nil {
				t.Errorf("%s: a guest started after the file was removed says its init found it (started from a snapshot: %v)", c.env, wasmhost.Restores(rt) > 0)
			}
			third.Close()
		}
		if n := wasmhost.Restores(rt); n != 0 {
			t.Errorf("%s: %d guests started from a snapshot, want none", c.env, n)
		}
	}
}

// A reactor's init that never returns (it spins, or sleeps) ends at the
// start's deadline, as a command's does, and one that exits fails the
// start; none leaves a snapshot, and the Runtime goes on.
func TestSnapshotInitNeverReturns(t *testing.T) {
	path, _ := reactorModules(t)
	rt, _ := sharedReactorRuntime(t)
	for _, how := range []string{"spin", "sleep", "exit"} {
		cmd := reactorCommand(t, rt, path)
		cmd.Env = append(cmd.Env, "PLUGKIT_GUEST_INIT="+how)
		cmd.Timeouts = host.Timeouts{Start: 2 * time.Second}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c, err := host.Start(ctx, cmd, host.Options{Versions: []int{1, 2}, Logger: testutil.Logger(t)})
		cancel()
		if err == nil {
			c.Close()
			t.Fatalf("init %s: the start succeeded", how)
		}
		t.Logf("init %s: %v", how, err)
		waitEnded(t, rt)
	}
	for _, key := range wasmhost.SnapshotKeys(rt) {
		if strings.Contains(key, "PLUGKIT_GUEST_INIT=") {
			t.Fatalf("a snapshot kept of a guest whose init never returned (arguments and environment %q)", key)
		}
	}
	c := startGuest(t, reactorCommand(t, rt, path))
	mustExist(t, c, "yes")
	// The guest whose init returned is kept: SnapshotKeys sees them.
	if !slices.ContainsFunc(wasmhost.SnapshotKeys(rt), func(k string) bool { return strings.Contains(k, "PLUGKIT_TEST_NAME="+t.Name()) }) {
		t.Fatal("no snapshot kept of the guest whose init returned")
	}
}

// A guest started from a snapshot keeps the bounds of any guest: its
// directories (nothing beyond them, a read-only one unwritable) and its
// memory limit.
func TestSnapshotGuestBounds(t *testing.T) {
	path, _ := reactorModules(t)
	ro, outside := testutil.TempDir(t), testutil.TempDir(t)
	if err := os.WriteFile(filepath.Join(ro, "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := reactorRuntime(t, wasmhost.Config{MemoryLimit: 64 << 20, Dirs: []wasmhost.Dir{{HostPath: ro, GuestPath: "/ro"}}})
	cmd := host.Command{Path: path, Cookie: testCookie, Runner: rt}
	startGuest(t, cmd).Close()
	c := startGuest(t, cmd)
	wantRestores(t, rt, 0, 1)
	mustExist(t, c, "read:/ro/data")
	for _, key := range []string{"read:/etc/passwd", "write:/ro/new", "write:/ro/../" + filepath.Base(outside) + "/escaped", "write:" + filepath.ToSlash(filepath.Join(outside, "escaped"))} {
		if err := exists(c, key); err == nil {
			t.Errorf("%s succeeded in a guest started from a snapshot; want it refused", key)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Error("a guest started from a snapshot wrote outside its directories")
	}
	if err := exists(c, "alloc"); err == nil {
		t.Fatal("allocating without bound succeeded")
	}
	<-c.Exited()
	var me *wasmhost.MemoryError
	if err := c.Close(); !errors.As(err, &me) || me.Limit != 64<<20 {
		t.Errorf("Close of a guest started from a snapshot that allocated without bound: %v; want a MemoryError of 64 MiB", err)
	}
}

// Config.SnapshotBytes bounds what a Runtime keeps: a guest's snapshot
// over it is not kept, and negative keeps none; the guests run all the
// same.
func TestSnapshotBytes(t *testing.T) {
	path, _ := reactorModules(t)
	for _, limit := range []int64{1 << 20, -1} {
		rt := reactorRuntime(t, wasmhost.Config{SnapshotBytes: limit})
		cmd := host.Command{Path: path, Cookie: testCookie, Runner: rt}
		for range 2 {
			c := startGuest(t, cmd)
			mustExist(t, c, "yes")
			c.Close()
		}
		wantRestores(t, rt, 0, 0)
	}
}

// TestSnapshotGuestStops: a guest started from a snapshot that spins is
// ended by its CPU budget, as any guest is, in both forms (the module
// and its data-less form).
func TestSnapshotGuestStops(t *testing.T) {
	path, _ := reactorModules(t)
	rt := reactorRuntime(t, wasmhost.Config{CPUBudget: 300 * time.Millisecond})
	cmd := host.Command{Path: path, Cookie: testCookie, Runner: rt}
	first := startGuest(t, cmd)
	mustExist(t, first, "yes")
	first.Close()
	for _, form := range []string{"snapshot", "data-less snapshot"} {
		if form == "data-less snapshot" {
			deadline := time.Now().Add(2 * time.Minute)
			for !wasmhost.DatalessReady(rt) {
				if time.Now().After(deadline) {
					t.Fatal("the module's data-less form was not compiled within 2 minutes")
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		c := startGuest(t, cmd)
		if err := exists(c, "spin"); err == nil {
			t.Fatalf("%s: a spinning call answered", form)
		}
		select {
		case <-c.Exited():
		case <-time.After(time.Minute):
			t.Fatalf("%s: a spinning guest still runs a minute past its CPU budget", form)
		}
		var be *host.BudgetError
		if err := c.Close(); !errors.As(err, &be) {
			t.Errorf("%s: Close: %v; want a BudgetError", form, err)
		}
	}
}
