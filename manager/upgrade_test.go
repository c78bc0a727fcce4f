package manager_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

// The keys the test plugin's Get answers for the upgrade tests: its
// release version, and its release version after a sleep (a long stream
// that spans an upgrade): "__sleep__500ms".
const (
	versionKey = "__version__"
	sleepKey   = "__sleep__"
)

// upgradeGet answers the upgrade tests' keys, and dies at the first
// other call when crash is set (a release that crashes at its first
// call; Init, which the manager replays before the switch, lives).
func upgradeGet(version string, crash bool, key string) ([]byte, bool) {
	if crash {
		os.Exit(3) // os.Stderr is the plugin's pipe, not to be written from here
	}
	if key == versionKey {
		return []byte(version), true
	}
	if d, ok := strings.CutPrefix(key, sleepKey); ok {
		wait, err := time.ParseDuration(d)
		if err != nil {
			return []byte(err.Error()), true
		}
		time.Sleep(wait)
		return []byte(version), true
	}
	return nil, false
}

// version reads the release that serves cl, through a stream.
func version(ctx context.Context, cl objectstorev2.ObjectStoreClient, key string) (string, error) {
	stream, err := cl.Get(ctx, &objectstorev2.GetRequest{Key: key})
	if err != nil {
		return "", err
	}
	var got []byte
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return string(got), nil
		}
		if err != nil {
			return string(got), err
		}
		got = append(got, msg.GetChunk()...)
	}
}

// events collects the manager's upgrade events.
type events struct {
	mu  sync.Mutex
	got []host.Event
	ch  chan host.Event
}

func newEvents() *events { return &events{ch: make(chan host.Event, 100)} }

func (e *events) on(ev host.Event) {
	if ev.Type < manager.EventUpgradeStarted {
		return
	}
	e.mu.Lock()
	e.got = append(e.got, ev)
	e.mu.Unlock()
	select {
	case e.ch <- ev:
	default:
	}
}

// wait waits, up to 30 s, for an event of type typ.
func (e *events) wait(t *testing.T, typ host.EventType) host.Event {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-e.ch:
			if ev.Type == typ {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %q event within 30 s", typ)
		}
	}
}

func (e *events) types() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.got {
		out = append(out, ev.Type.String())
	}
	return out
}

// upgradeManager is a manager of one plugin "p" in dir, at mode, with
// the upgrade policy given and its upgrade events collected.
func upgradeManager(t *testing.T, dir, mode string, policy manager.UpgradePolicy) (*manager.Manager, *manager.Finder, *events) {
	t.Helper()
	writePlugin(t, dir, "p", mode)
	ev := newEvents()
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Upgrade: policy, Telemetry: host.Telemetry{OnEvent: ev.on}})
	return m, finder, ev
}

func upgrade(t *testing.T, m *manager.Manager) manager.UpgradeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := m.Upgrade(ctx, "objectstore", "p")
	if res.Outcome != manager.UpgradeRefused && res.Outcome != manager.UpgradeRolledBack && err != nil {
		t.Fatalf("Upgrade: %v (%+v)", err, res)
	}
	return res
}

// TestUpgradeMovesCallsAndReplaysInit: the binary replaced on disk takes
// over: Init is replayed on it before any call moves, a stream in
// flight across the switch completes on the old process, new calls go
// to the new one, and the old process is gone once drained.
func TestUpgradeMovesCallsAndReplaysInit(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	m, _, ev := upgradeManager(t, dir, "p 2 v=1.0.0", manager.UpgradePolicy{Probation: 200 * time.Millisecond})
	conn, _ := store(t, m, "p")
	cl := initStore(t, conn, map[string]string{"bucket": "b1"})
	if v, err := version(ctxT(t), cl, versionKey); err != nil || v != "1.0.0" {
		t.Fatalf("before: version %q, %v", v, err)
	}
	oldPid := conn.Pid()
	type ended struct {
		v   string
		err error
	}
	spanning := make(chan ended, 1)
	ctx := ctxT(t)
	go func() {
		v, err := version(ctx, cl, sleepKey+"1s")
		spanning <- ended{v, err}
	}()
	time.Sleep(100 * time.Millisecond) // the stream reaches the old process (if not, it runs on the new: checked below)
	writePlugin(t, dir, "p", "p 2 v=2.0.0")
	res := upgrade(t, m)
	if res.Outcome != manager.UpgradeCompleted || res.From.Version != "1.0.0" || res.To.Version != "2.0.0" || res.From.Pid != oldPid || res.To.Pid == oldPid || res.To.Pid == 0 {
		t.Fatalf("result %+v, want completed from 1.0.0 (pid %d) to 2.0.0", res, oldPid)
	}
	if len(res.Names) != 1 || res.Names[0] != "objectstore/p" {
		t.Errorf("names %v, want [objectstore/p]", res.Names)
	}
	s := <-spanning
	if s.err != nil || s.v != "1.0.0" {
		t.Errorf("the stream spanning the switch ended with %q, %v; want it completed by the old release", s.v, s.err)
	}
	if got := config(t, cl); got != "map[bucket:b1]" {
		t.Errorf("the new release has config %q: Init was not replayed", got)
	}
	if v, err := version(ctxT(t), cl, versionKey); err != nil || v != "2.0.0" {
		t.Errorf("after: version %q, %v; want 2.0.0", v, err)
	}
	if conn.Pid() != res.To.Pid {
		t.Errorf("Conn.Pid %d, want the new process %d", conn.Pid(), res.To.Pid)
	}
	if testutil.Running(oldPid) {
		t.Errorf("the old process %d still runs after its drain", oldPid)
	}
	if got, want := strings.Join(ev.types(), ", "), "upgrade started, upgrade switched, upgrade completed"; got != want {
		t.Errorf("events %s, want %s", got, want)
	}
	st := m.Status()
	if len(st) != 1 || st[0].Serving.Version != "2.0.0" || len(st[0].Draining) != 0 {
		t.Errorf("status %+v, want 2.0.0 serving, nothing draining", st)
	}
}

// TestRefreshStartsNothingWhenNothingChanged: a refresh that finds the
// same binaries starts no process and reports nothing.
func TestRefreshStartsNothingWhenNothingChanged(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	m, finder, _ := upgradeManager(t, dir, "p 2", manager.UpgradePolicy{})
	conn, _, pid := running(t, m, "p")
	launches := finder.Launches()
	res, err := m.Refresh(ctxT(t))
	if err != nil || len(res) != 0 {
		t.Fatalf("Refresh: %+v, %v; want nothing", res, err)
	}
	if finder.Launches() != launches || conn.Pid() != pid {
		t.Errorf("Refresh with nothing changed launched %d processes (pid %d, was %d)", finder.Launches()-launches, conn.Pid(), pid)
	}
	res1, err := m.Upgrade(ctxT(t), "objectstore", "p")
	if err != nil || res1.Outcome != manager.UpgradeUnchanged {
		t.Errorf("Upgrade of an unchanged plugin: %+v, %v; want unchanged", res1, err)
	}
}

// TestUpgradeRefusesAMissingMajor: a new release that no longer serves
// the major a Conn speaks is refused before any call moves, with a
// message naming the plugin, both versions, what is missing and what to
// do; the old process serves on.
func TestUpgradeRefusesAMissingMajor(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	m, _, ev := upgradeManager(t, dir, "p 2 v=1.0.0", manager.UpgradePolicy{})
	conn, cl, pid := running(t, m, "p")
	writePlugin(t, dir, "p", "p 1 v=3.0.0")
	err := refused(t, m, "p", "keeps serving", conn, cl, pid)
	for _, want := range []string{"objectstore \"p\"", "v1.0.0", "v3.0.0", "major 2", "serves objectstore 1.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q:\n%v", want, err)
		}
	}
	if got, want := strings.Join(ev.types(), ", "), "upgrade started, upgrade refused"; got != want {
		t.Errorf("events %s, want %s", got, want)
	}
}

// TestUpgradeRefusesALiar: a new release whose Describe answer claims a
// major it does not serve is refused before any call moves (the attack
// of a binary that lies to be let in).
func TestUpgradeRefusesALiar(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "p", "liar 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	conn, cl, pid := running(t, m, "liar")
	writePlugin(t, dir, "p", "liar") // claims objectstore major 2, serves major 1
	refused(t, m, "liar", "does not serve objectstore.v2.ObjectStore", conn, cl, pid)
}

// TestUpgradeRefusesAPinMismatch: a new binary that does not have its
// pinned SHA-256 is refused; the old process serves on.
func TestUpgradeRefusesAPinMismatch(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	path := writePlugin(t, dir, "p", "p 2 v=1.0.0")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, Pins: map[string]string{path: fileSum(t, path)}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	conn, cl, pid := running(t, m, "p")
	writePlugin(t, dir, "p", "p 2 v=6.6.6")
	refused(t, m, "p", "SHA-256", conn, cl, pid)
}

// TestUpgradeEndsAStreamPastTheDrainDeadline: a stream still running on
// the old process when the drain deadline passes ends with
// codes.Unavailable, saying the plugin was upgraded.
func TestUpgradeEndsAStreamPastTheDrainDeadline(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	m, _, ev := upgradeManager(t, dir, "p 2 v=1.0.0", manager.UpgradePolicy{Drain: time.Second, Probation: -1})
	_, cl, oldPid := running(t, m, "p")
	spanning := make(chan error, 1)
	ctx := ctxT(t)
	go func() {
		_, err := version(ctx, cl, sleepKey+"20s")
		spanning <- err
	}()
	time.Sleep(100 * time.Millisecond)
	writePlugin(t, dir, "p", "p 2 v=2.0.0")
	done := switched(t, m, ev)
	if st := m.Status(); len(st) != 1 || st[0].Serving.Version != "2.0.0" || len(st[0].Draining) != 1 || st[0].Draining[0].Version != "1.0.0" || st[0].Draining[0].Pid != oldPid || st[0].Draining[0].InFlight != 1 {
		t.Errorf("status during the drain: %+v; want 2.0.0 serving, 1.0.0 (pid %d) draining its stream", st, oldPid)
	}
	if res := <-done; res.Outcome != manager.UpgradeCompleted {
		t.Fatalf("result %+v, want completed", res)
	}
	select {
	case err := <-spanning:
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "upgraded") || !strings.Contains(err.Error(), "2.0.0") {
			t.Errorf("the stream past the drain deadline ended with %v; want Unavailable saying the plugin was upgraded to 2.0.0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the stream past the drain deadline still runs 15 s after the upgrade")
	}
	if testutil.Running(oldPid) {
		t.Errorf("the old process %d still runs after its drain deadline", oldPid)
	}
}

// TestUpgradeRollsBackACrash: a release that crashes at its first call
// is rolled back within its probation: calls go back to the old process,
// the result says why, and Refresh does not try it again until it
// changes.
func TestUpgradeRollsBackACrash(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	m, _, ev := upgradeManager(t, dir, "p 2 v=1.0.0", manager.UpgradePolicy{Probation: 5 * time.Second, Drain: 2 * time.Second})
	conn, _ := store(t, m, "p")
	cl := initStore(t, conn, map[string]string{"bucket": "b1"})
	if _, err := version(ctxT(t), cl, versionKey); err != nil {
		t.Fatal(err)
	}
	oldPid := conn.Pid()
	writePlugin(t, dir, "p", "p 2 v=2.0.0 crash")
	done := switched(t, m, ev)
	_, err := version(ctxT(t), cl, versionKey)
	if err == nil {
		t.Fatal("the call that crashes the new release succeeded")
	}
	res := <-done
	if res.Outcome != manager.UpgradeRolledBack || res.Cause == nil || !strings.Contains(res.Cause.Error(), "exit status 3") && !strings.Contains(res.Cause.Error(), "without its answer") {
		t.Fatalf("result %+v; want rolled back, the cause naming the crash", res)
	}
	if v, err := version(ctxT(t), cl, versionKey); err != nil || v != "1.0.0" || conn.Pid() != oldPid {
		t.Errorf("after the rollback: version %q, %v, pid %d; want the old process %d", v, err, conn.Pid(), oldPid)
	}
	if got := config(t, cl); got != "map[bucket:b1]" {
		t.Errorf("the old release has config %q after the rollback", got)
	}
	if conn2, info := store(t, m, "p"); info.PluginVersion != "1.0.0" || conn2.Pid() != oldPid {
		t.Errorf("a Dispense after the rollback: version %s, pid %d; want the release that serves, 1.0.0 (pid %d)", info.PluginVersion, conn2.Pid(), oldPid)
	}
	again, err := m.Refresh(ctxT(t))
	if err != nil || len(again) != 0 {
		t.Errorf("Refresh tried the release rolled back again: %+v, %v", again, err)
	}
	writePlugin(t, dir, "p", "p 2 v=2.0.1")
	fixed, err := m.Refresh(ctxT(t))
	if err != nil || len(fixed) != 1 || fixed[0].Outcome != manager.UpgradeCompleted || fixed[0].To.Version != "2.0.1" {
		t.Errorf("Refresh of a fixed release: %+v, %v; want it completed", fixed, err)
	}
}

// TestUpgradeRollsBackOnlyErrors: a new release whose calls all fail
// (Internal, the plugin's own answer: Config.Upgrade.Failures of them,
// none succeeding) is rolled back.
func TestUpgradeRollsBackOnlyErrors(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	m, _, ev := upgradeManager(t, dir, "p 2 v=1.0.0", manager.UpgradePolicy{Probation: 20 * time.Second, Failures: 2})
	_, cl, _ := running(t, m, "p")
	writePlugin(t, dir, "p", "p 2 v=2.0.0")
	done := switched(t, m, ev)
	for range 2 {
		if _, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: internalKey}); status.Code(err) != codes.Internal {
			t.Fatalf("Exists(%s): %v, want Internal", internalKey, err)
		}
	}
	res := <-done
	if res.Outcome != manager.UpgradeRolledBack || res.Cause == nil || !strings.Contains(res.Cause.Error(), "2 calls failed") {
		t.Fatalf("result %+v; want rolled back for failing calls", res)
	}
	if v, err := version(ctxT(t), cl, versionKey); err != nil || v != "1.0.0" {
		t.Errorf("after the rollback: version %q, %v; want 1.0.0", v, err)
	}
}

// fileSum is the hex SHA-256 of the file at path.
func fileSum(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// TestUpgradeMovesToANewEndpointSet: a plugin service's new endpoints
// (its remotes file rewritten) take over through the same path: calls
// go to the new service, and Status names it.
func TestUpgradeMovesToANewEndpointSet(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	pki, err := remotetest.NewPKI(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	service := func(version string) string {
		cat, err := catalog.New(version, catalog.Implement[objectstorev1.ObjectStoreServer](objectstore.Kind, 1, 0, "example.com/memory",
			&objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: backend.NewMemory()}))
		if err != nil {
			t.Fatal(err)
		}
		addr, stop := remotetest.Start(t, pki.ServiceEnv("127.0.0.1:0"), "", plugin.Config{Versions: map[int]plugin.Register{wire.CatalogProtocolVersion: cat.Register}})
		t.Cleanup(func() { stop() })
		return addr
	}
	remotes := filepath.Join(dir, "remotes.json")
	point := func(addr string) {
		writeFile(t, remotes, fmt.Sprintf(`{"remotes":[{"kind":"objectstore","name":"example.com/memory","endpoints":[%q],
		"tls":{"ca":"ca.crt","cert":"host.crt","key":"host.key"}}]}`, addr), 0o600)
	}
	addr1, addr2 := service("1.0.0"), service("2.0.0")
	point(addr1)
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.RemotesFile(remotes)}, Upgrade: manager.UpgradePolicy{Probation: 100 * time.Millisecond}})
	store, err := objectstore.Open(ctxT(t), m, "example.com/memory")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctxT(t), "k", []byte("on the first service")); err != nil {
		t.Fatal(err)
	}
	point(addr2)
	res, err := m.Refresh(ctxT(t))
	if err != nil || len(res) != 1 || res[0].Outcome != manager.UpgradeCompleted || res[0].From.Path != addr1 || res[0].To.Path != addr2 || res[0].To.Version != "2.0.0" {
		t.Fatalf("Refresh: %+v, %v; want completed from %s to %s", res, err, addr1, addr2)
	}
	if _, err := store.Get(ctxT(t), "k"); err == nil {
		t.Errorf("Get found the first service's object: the call did not go to the new endpoints")
	}
	if st := m.Status(); len(st) != 1 || st[0].Serving.Path != addr2 || len(st[0].Draining) != 0 {
		t.Errorf("status %+v, want %s serving, nothing draining", st, addr2)
	}
}

// TestUpgradeIsSeen: every upgrade has a span, and the upgrades counter
// counts it by outcome.
func TestUpgradeIsSeen(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "p", "p 2 v=1.0.0")
	o, tel := observe(t)
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Telemetry: tel, Upgrade: manager.UpgradePolicy{Probation: -1}})
	running(t, m, "p")
	writePlugin(t, dir, "p", "p 1 v=1.1.0")
	if res, _ := m.Upgrade(ctxT(t), "objectstore", "p"); res.Outcome != manager.UpgradeRefused {
		t.Fatalf("result %+v, want refused", res)
	}
	writePlugin(t, dir, "p", "p 2 v=2.0.0")
	if res, err := m.Upgrade(ctxT(t), "objectstore", "p"); res.Outcome != manager.UpgradeCompleted {
		t.Fatalf("result %+v, %v; want completed", res, err)
	}
	for outcome, want := range map[string]int64{"refused": 1, "completed": 1, "rolled_back": 0} {
		if got := o.count(t, "plugkit.plugin.upgrades", "plugkit.upgrade.outcome", outcome); got != want {
			t.Errorf("plugkit.plugin.upgrades{outcome=%s} = %d, want %d", outcome, got, want)
		}
	}
	var spans []string
	for _, s := range o.spans.GetSpans() {
		if s.Name == "plugkit.upgrade" {
			spans = append(spans, s.Status.Code.String())
		}
	}
	if got := strings.Join(spans, ", "); got != "Error, Unset" {
		t.Errorf("plugkit.upgrade spans with status %s, want Error (the refusal), Unset", got)
	}
}

// running dispenses name from m and makes a first call, so that its
// process runs; it returns the client and the process's pid.
func running(t *testing.T, m *manager.Manager, name string) (*manager.Conn, objectstorev2.ObjectStoreClient, int) {
	t.Helper()
	conn, _ := store(t, m, name)
	cl := objectstorev2.NewObjectStoreClient(conn)
	if _, err := version(ctxT(t), cl, versionKey); err != nil {
		t.Fatal(err)
	}
	return conn, cl, conn.Pid()
}

// refused upgrades name, wants it refused with an error that says want,
// and the old process (pid, release 1.0.0) serving on; it returns the
// error.
func refused(t *testing.T, m *manager.Manager, name, want string, conn *manager.Conn, cl objectstorev2.ObjectStoreClient, pid int) error {
	t.Helper()
	res, err := m.Upgrade(ctxT(t), "objectstore", name)
	if res.Outcome != manager.UpgradeRefused || err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("result %+v, %v; want refused, saying %q", res, err, want)
	}
	if v, err := version(ctxT(t), cl, versionKey); err != nil || v != "1.0.0" || conn.Pid() != pid {
		t.Errorf("after the refusal: version %q, %v, pid %d (was %d); want the old process serving", v, err, conn.Pid(), pid)
	}
	return err
}

// switched upgrades "p" in the background and returns, once calls moved
// to the new release, the channel of the upgrade's result.
func switched(t *testing.T, m *manager.Manager, ev *events) <-chan manager.UpgradeResult {
	t.Helper()
	ctx := ctxT(t)
	done := make(chan manager.UpgradeResult, 1)
	go func() {
		res, _ := m.Upgrade(ctx, "objectstore", "p") // the result says what happened
		done <- res
	}()
	ev.wait(t, manager.EventUpgradeSwitched)
	return done
}

// swapOnConnect is a Source that runs swap before each Connect: the
// attacker who replaces a binary after it was described, before it runs.
type swapOnConnect struct {
	manager.Source
	mu   sync.Mutex
	swap func()
}

func (s *swapOnConnect) Connect(ctx context.Context, e manager.Entry) (*host.Client, error) {
	s.mu.Lock()
	swap := s.swap
	s.mu.Unlock()
	if swap != nil {
		swap()
	}
	return s.Source.Connect(ctx, e)
}

// TestUpgradeRunsOnlyTheDescribedFile: a binary replaced after the
// sources described the new release, before it starts, is not run under
// the description of another (without any pin: the SHA-256 the release
// was described with is checked on the open file it executes); the
// upgrade is refused, saying so, and the old process serves on.
func TestUpgradeRunsOnlyTheDescribedFile(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "p", "p 2 v=1.0.0")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	src := &swapOnConnect{Source: finder.Dirs(dir)}
	m := newManager(t, manager.Config{Sources: []manager.Source{src}})
	conn, cl, pid := running(t, m, "p")
	writePlugin(t, dir, "p", "p 2 v=2.0.0")
	src.mu.Lock()
	src.swap = func() { writePlugin(t, dir, "p", "p 2 v=6.6.6") }
	src.mu.Unlock()
	refused(t, m, "p", "changed after it was described", conn, cl, pid)
}

// TestCloseEndsAnUpgrade: Close during an upgrade's probation ends it
// (Upgrade returns ErrClosed) and returns with no process of either
// release running.
func TestCloseEndsAnUpgrade(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	m, _, ev := upgradeManager(t, dir, "p 2 v=1.0.0", manager.UpgradePolicy{Probation: time.Minute})
	_, _, oldPid := running(t, m, "p")
	writePlugin(t, dir, "p", "p 2 v=2.0.0")
	ctx := ctxT(t)
	done := make(chan error, 1)
	go func() {
		_, err := m.Upgrade(ctx, "objectstore", "p")
		done <- err
	}()
	ev.wait(t, manager.EventUpgradeSwitched)
	newPid := m.Status()[0].Serving.Pid
	m.Close()
	goneAfterClose(t, oldPid, newPid)
	endedByClose(t, done)
}

// TestCloseWaitsForAnUpgradeBeingChecked: Close while an upgrade runs
// the Conns' hooks on the new process (before any call moved) ends the
// upgrade and returns once the new process is gone.
func TestCloseWaitsForAnUpgradeBeingChecked(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "p", "p 2 v=1.0.0")
	var mu sync.Mutex
	var started []int
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, Host: host.Options{Telemetry: host.Telemetry{OnEvent: func(e host.Event) {
		if e.Type == host.EventStarted {
			mu.Lock()
			started = append(started, e.Pid)
			mu.Unlock()
		}
	}}}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	conn, _, _ := running(t, m, "p")
	inHook := make(chan struct{})
	var once sync.Once
	conn.OnRestart(func(ctx context.Context, _ grpc.ClientConnInterface) error {
		once.Do(func() { close(inHook) })
		<-ctx.Done() // held until the upgrade's context ends
		return ctx.Err()
	})
	writePlugin(t, dir, "p", "p 2 v=2.0.0")
	done := make(chan error, 1)
	go func() {
		_, err := m.Upgrade(context.Background(), "objectstore", "p")
		done <- err
	}()
	select {
	case <-inHook:
	case <-time.After(30 * time.Second):
		t.Fatal("the upgrade did not run the hook within 30 s")
	}
	m.Close()
	mu.Lock()
	pids := slices.Clone(started)
	mu.Unlock()
	goneAfterClose(t, pids...)
	endedByClose(t, done)
}

// goneAfterClose wants none of pids running.
func goneAfterClose(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if testutil.Running(pid) {
			t.Errorf("process %d still runs after Close", pid)
		}
	}
}

// endedByClose wants the Upgrade whose error done carries ended, by
// Close, within 10 s.
func endedByClose(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, manager.ErrClosed) {
			t.Errorf("Upgrade ended by Close returned %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Upgrade still runs 10 s after Close")
	}
}

// TestUpgradeMovesEveryNameOfTheProcess: a binary that serves two names
// runs in one process, which an upgrade of either name moves as a whole.
func TestUpgradeMovesEveryNameOfTheProcess(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	m, _, _ := upgradeManager(t, dir, "a,b 2 v=1.0.0", manager.UpgradePolicy{Probation: -1})
	connA, clA, pid := running(t, m, "a")
	connB, clB, pidB := running(t, m, "b")
	if pidB != pid {
		t.Fatalf("a and b run in processes %d and %d, want one", pid, pidB)
	}
	writePlugin(t, dir, "p", "a,b 2 v=2.0.0")
	res, err := m.Upgrade(ctxT(t), "objectstore", "a")
	if err != nil || res.Outcome != manager.UpgradeCompleted || strings.Join(res.Names, " ") != "objectstore/a objectstore/b" {
		t.Fatalf("result %+v, %v; want completed, moving objectstore/a and objectstore/b", res, err)
	}
	for name, cl := range map[string]objectstorev2.ObjectStoreClient{"a": clA, "b": clB} {
		if v, err := version(ctxT(t), cl, versionKey); err != nil || v != "2.0.0" {
			t.Errorf("%s after the upgrade: version %q, %v; want 2.0.0", name, v, err)
		}
	}
	if connA.Pid() != res.To.Pid || connB.Pid() != res.To.Pid {
		t.Errorf("a on %d, b on %d after the upgrade; want both on %d", connA.Pid(), connB.Pid(), res.To.Pid)
	}
	if st := m.Status(); len(st) != 2 || st[0].Name != "a" || st[1].Name != "b" || st[0].Serving.Version != "2.0.0" || st[1].Serving.Version != "2.0.0" {
		t.Errorf("status %+v; want a and b served by 2.0.0", st)
	}
}
