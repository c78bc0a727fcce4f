package manager_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

var cookie = handshake.Cookie{Key: "PLUGKIT_MANAGER_TEST", Value: "1"}

const modeEnv = "PLUGKIT_MANAGER_TEST_MODE"

func TestMain(m *testing.M) {
	if mode := cmp.Or(os.Getenv(modeEnv), modeFromFile()); mode != "" {
		runPlugin(mode)
		return
	}
	if dir := os.Getenv(discoverEnv); dir != "" {
		discoverAndPrint(dir)
		return
	}
	goleak.VerifyTestMain(testutil.Tidy(testutil.Then(m, closeReleases)), goleak.IgnoreTopFunction("github.com/plugkit/plugkit/host.spawner")) // the thread every plugin is forked from
}

// discoverEnv names a plugin directory that the test binary, run with it
// set, discovers and reports on (discoverAndPrint), as whatever user it
// was started as.
const discoverEnv = "PLUGKIT_MANAGER_TEST_DISCOVER"

// discoverAndPrint discovers dir and prints one line per binary: its base
// name, a tab, and its error or "ok".
func discoverAndPrint(dir string) {
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Discover(ctx); err != nil {
		fmt.Println("Discover:", err)
		return
	}
	for _, b := range m.Entries() {
		reason := "ok"
		if b.Err != nil {
			reason = strings.ReplaceAll(b.Err.Error(), "\n", " ")
		}
		fmt.Printf("%s\t%s\n", filepath.Base(b.Path), reason)
	}
}

// configBackend is an in-memory backend whose object "__config__" is the
// configuration Init gave it, so tests can see that Init was replayed.
type configBackend struct {
	*backend.Memory
	mu     sync.Mutex
	config string
	// version and crash are the upgrade tests' (upgradeGet).
	version string
	crash   bool
}

func (c *configBackend) Init(cfg map[string]string) error {
	if msg := cfg["panic"]; msg != "" {
		panic(msg) // gRPC does not recover: the process dies
	}
	c.mu.Lock()
	c.config = fmt.Sprint(cfg)
	c.mu.Unlock()
	return nil
}

func (c *configBackend) Get(key string) ([]byte, error) {
	if key == "__config__" {
		c.mu.Lock()
		defer c.mu.Unlock()
		return []byte(c.config), nil
	}
	if key == internalKey {
		return nil, errors.New("the backend failed, as asked") // Internal, the plugin's own answer
	}
	if data, ok := upgradeGet(c.version, c.crash, key); ok {
		return data, nil
	}
	return c.Memory.Get(key)
}

// internalKey is the key a test plugin's Get answers with Internal,
// living on.
const internalKey = "__internal__"

// runPlugin serves a catalog plugin: mode is "NAME MAJORS [CAPS]", e.g.
// "x 1,2 presign" (release version 1.0.0; ending in " unversioned", none),
// or "plain" for a plugin without a catalog.
func runPlugin(mode string) {
	if mode == "goplugin" {
		// A real go-plugin plugin: it speaks the protocol but has no catalog.
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: cookie.Key, MagicCookieValue: cookie.Value},
			Plugins:         goplugin.PluginSet{"objectstore": &goPluginStore{}},
			GRPCServer:      goplugin.DefaultGRPCServer,
		})
		os.Exit(0)
	}
	if line, ok := rawDescribeLine(mode); ok {
		fmt.Println(line)
		if mode == "describe-stays" {
			time.Sleep(time.Minute) // the host kills it before
		}
		os.Exit(0)
	}
	if mode == "wrongcookie" {
		// A catalog plugin built for another cookie value: a newcomer's
		// typo, or a plugin of another host.
		cat, _ := catalog.New("1.0.0", catalog.Implement[objectstorev1.ObjectStoreServer]("objectstore", 1, 0, "typo", &objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: backend.NewMemory()}))
		catalog.Serve(handshake.Cookie{Key: cookie.Key, Value: "another"}, cat)
	}
	if mode == "plain" {
		plugin.Serve(plugin.Config{Cookie: cookie, Versions: map[int]plugin.Register{1: func(s *grpc.Server, _ *broker.Broker) error {
			objectstorev1.RegisterObjectStoreServer(s, backend.V1{B: backend.NewMemory()})
			return nil
		}}})
	}
	if d := hostileDescription(mode); d != nil {
		// A plugin whose Describe answer is not what it serves: it
		// claims objectstore major 2 but serves major 1 only.
		plugin.Serve(plugin.Config{Cookie: cookie, Versions: map[int]plugin.Register{wire.CatalogProtocolVersion: func(s *grpc.Server, _ *broker.Broker) error {
			catalogv1.RegisterCatalogServer(s, fixedCatalog{d: d})
			objectstorev1.RegisterObjectStoreServer(s, backend.V1{B: backend.NewMemory()})
			return nil
		}}})
		os.Exit(0)
	}
	f := strings.Fields(mode)
	version := "1.0.0"
	if f[len(f)-1] == "unversioned" {
		f, version = f[:len(f)-1], ""
	}
	name, majors := f[0], f[1]
	b := &configBackend{Memory: backend.NewMemory(), version: version}
	var caps []string
	for _, x := range f[2:] {
		switch {
		case strings.HasPrefix(x, "v="): // the release version (upgrade tests)
			b.version = x[2:]
		case x == "crash": // dies at its first call but Init (upgrade tests)
			b.crash = true
		default:
			caps = strings.Split(x, ",")
		}
	}
	var impls []catalog.Implementation
	for _, name := range strings.Split(name, ",") { // "a,b": two names in one binary
		if strings.Contains(majors, "1") {
			impls = append(impls, catalog.Implement[objectstorev1.ObjectStoreServer]("objectstore", 1, 0, name, &objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: b}))
		}
		if strings.Contains(majors, "2") {
			impls = append(impls, catalog.Implement[objectstorev2.ObjectStoreServer]("objectstore", 2, 1, name, &objectstorev2.ObjectStore_ServiceDesc, backend.V2{B: b}, caps...))
		}
	}
	cat, err := catalog.New(b.version, impls...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	catalog.Serve(cookie, cat)
}

// hostileDescription is the Describe answer of a lying plugin mode, or
// nil: "liar" claims objectstore "liar" at major 2, "huge" adds 10 MB to
// that, "nameless" gives its kind no name.
func hostileDescription(mode string) *catalogv1.DescribeResponse {
	d := &catalogv1.DescribeResponse{PluginVersion: "6.6.6", Kinds: []*catalogv1.Kind{{
		Name:   "objectstore",
		Majors: []*catalogv1.Major{{Major: 2, Minor: 1, Service: objectstorev2.ObjectStore_ServiceDesc.ServiceName, Names: []string{"liar"}}},
	}}}
	switch mode {
	case "liar":
	case "huge":
		d.Kinds[0].Majors[0].Capabilities = []string{strings.Repeat("c", 10<<20)}
	case "nameless":
		d.Kinds[0].Name = ""
	default:
		return nil
	}
	return d
}

// fixedCatalog answers Describe with d, whatever the plugin serves.
type fixedCatalog struct {
	catalogv1.UnimplementedCatalogServer
	d *catalogv1.DescribeResponse
}

func (f fixedCatalog) Describe(context.Context, *catalogv1.DescribeRequest) (*catalogv1.DescribeResponse, error) {
	return f.d, nil
}

// goPluginStore is go-plugin's GRPCPlugin for the v1 object store.
type goPluginStore struct {
	goplugin.NetRPCUnsupportedPlugin
}

// GRPCServer registers an in-memory v1 store.
func (goPluginStore) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	objectstorev1.RegisterObjectStoreServer(s, backend.V1{B: backend.NewMemory()})
	return nil
}

// GRPCClient is not used: the tests' host is plugkit's manager.
func (goPluginStore) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("not used")
}

// writePlugin writes an executable script into dir that runs this test
// binary as a plugin in mode.
func writePlugin(t testing.TB, dir, file, mode string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, file)
	if runtime.GOOS == "windows" {
		return writeWindowsPlugin(t, exe, path, mode)
	}
	script := fmt.Sprintf("#!/bin/sh\n%s='%s' GORACE=atexit_sleep_ms=0 exec '%s' \"$@\"\n", modeEnv, mode, exe)
	writeFile(t, path, script, 0o755)
	return path
}

// writeCrashingPlugin is writePlugin's plugin (a script), which dies at
// its start ("segfault at start", exit status 139) once crash was
// called: a restart runs only the file its release was described from,
// so the file itself stays the same.
func writeCrashingPlugin(t testing.TB, dir, file, mode string) (path string, crash func()) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path, marker := filepath.Join(dir, file), filepath.Join(dir, ".crash-"+file) // Dirs skips dot-files
	script := fmt.Sprintf("#!/bin/sh\nif [ -e '%s' ]; then echo 'segfault at start' >&2; exit 139; fi\n%s='%s' GORACE=atexit_sleep_ms=0 exec '%s' \"$@\"\n", marker, modeEnv, mode, exe)
	writeFile(t, path, script, 0o755)
	return path, func() { writeFile(t, marker, "", 0o644) }
}

// writeWindowsPlugin is writePlugin where no script can set the mode
// (Windows runs only .exe files): a copy of this test binary named
// path.exe whose modeSlot holds mode, which modeFromFile reads back. As
// with the scripts, another mode makes another file.
func writeWindowsPlugin(t testing.TB, exe, path, mode string) string {
	t.Helper()
	if filepath.Ext(path) == "" {
		path += ".exe"
	}
	data, err := os.ReadFile(exe) // a copy: Windows keeps a running binary's links from being removed
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(modeSlot))
	if i < 0 || bytes.Count(data, []byte(modeSlot)) != 1 || len(mode) > len(modeSlot)-len(modeSlotPrefix) {
		t.Fatalf("cannot write mode %q into %s: its mode slot is missing, repeated or too short", mode, exe)
	}
	copy(data[i+len(modeSlotPrefix):], mode)
	writeFile(t, path, string(data), 0o755)
	return path
}

// modeSlotPrefix starts modeSlot.
const modeSlotPrefix = "#plugkit-test-mode:"

// modeSlot is the room in this binary's data where writeWindowsPlugin
// writes a copy's mode (padded with spaces). A var, so that the program
// reads its bytes at run time.
var modeSlot = "#plugkit-test-mode:                                                                "

// modeFromFile is the mode writeWindowsPlugin gave this binary, if any.
func modeFromFile() string {
	return strings.TrimSpace(strings.TrimPrefix(modeSlot, modeSlotPrefix))
}

// writeFile writes content to path with mode, holding off forks
// (testutil.WriteHoldingForks: a plugin file a test runs).
func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := testutil.WriteHoldingForks(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func newManager(t testing.TB, cfg manager.Config) *manager.Manager {
	t.Helper()
	if cfg.Restart.Backoff == 0 {
		cfg.Restart.Backoff = 10 * time.Millisecond
	}
	m := manager.New(cfg)
	t.Cleanup(func() { m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	return m
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestDiscoverReportsBadBinariesAndDuplicates(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "its unusable binaries are shell scripts and a file without the execute bit, which Windows does not have")
	d1, d2 := testutil.TempDir(t), testutil.TempDir(t)
	a := writePlugin(t, d1, "a", "x 1,2 presign")
	writePlugin(t, d1, "b", "y 1")
	writePlugin(t, d2, "c", "x 1")
	writePlugin(t, d1, "plain", "plain")
	writePlugin(t, d1, "goplugin", "goplugin")
	writeFile(t, filepath.Join(d1, "notes.txt"), "not a plugin", 0o644)
	writeFile(t, filepath.Join(d1, "broken"), "#!/bin/sh\necho 'cannot start: missing libfoo' >&2\nexit 1\n", 0o755)
	writeFile(t, filepath.Join(d1, ".hidden"), "ignored", 0o755)

	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(d1, d2)}})
	reasons := map[string]string{}
	for _, b := range m.Entries() {
		if b.Err != nil {
			reasons[filepath.Base(b.Path)] = b.Err.Error()
		}
	}
	for file, want := range map[string]string{
		"notes.txt": "not executable",
		"broken":    "missing libfoo",
		"plain":     "serves no plugkit.catalog.v1.Catalog",
		"goplugin":  "serves no plugkit.catalog.v1.Catalog",
	} {
		if !strings.Contains(reasons[file], want) {
			t.Errorf("%s: reason %q, want it to mention %q", file, reasons[file], want)
		}
	}
	if len(m.Entries()) != 7 {
		t.Errorf("%d binaries, want 7 (hidden files skipped)", len(m.Entries()))
	}
	im, err := m.Lookup("objectstore", "x")
	if err != nil || im.Path != a {
		t.Errorf("Lookup x = %v, %v; want %s (the earlier directory wins)", im.Path, err, a)
	}
	probs := m.Problems()
	if len(probs) != 1 || !strings.Contains(probs[0], `duplicate: objectstore "x"`) || !strings.Contains(probs[0], "using "+a) {
		t.Errorf("problems = %q", probs)
	}
	if _, err := m.Lookup("objectstore", "zzz"); err == nil || !strings.Contains(err.Error(), "x, y") {
		t.Errorf("Lookup of an unknown name: %v", err)
	}
}

// TestLookupNamesUnusableBinaries checks that a failed Lookup or Dispense
// says why the binaries that are there could not be used, instead of
// leaving the reason in Entries().
func TestLookupNamesUnusableBinaries(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "one unusable binary is a file without the execute bit, which Windows does not have")
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "typo", "wrongcookie")
	writePlugin(t, dir, "plain", "goplugin")
	writeFile(t, filepath.Join(dir, "notexec"), "#!/bin/sh\n", 0o644)
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	_, err := m.Lookup("objectstore", "typo")
	if err == nil {
		t.Fatal("Lookup found a plugin with the wrong cookie")
	}
	msg := err.Error()
	for _, want := range []string{
		`no plugin implements kind "objectstore"`,
		"3 plugins found could not be used",
		filepath.Join(dir, "typo") + ": ", "cookie",
		filepath.Join(dir, "plain") + ": ", "serves no plugkit.catalog.v1.Catalog",
		filepath.Join(dir, "notexec") + ": not executable",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("Lookup error lacks %q:\n%s", want, msg)
		}
	}
	_, err = manager.Dispense(ctxT(t), m, "objectstore", "typo", manager.Majors[objectstorev1.ObjectStoreClient]{
		1: func(c *manager.Conn, _ manager.Info) (objectstorev1.ObjectStoreClient, error) {
			return objectstorev1.NewObjectStoreClient(c), nil
		},
	})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "typo")+": ") {
		t.Errorf("Dispense error does not name the unusable binary: %v", err)
	}
}

// TestOpenBeforeDiscover: a kind's Open (Dispense, Lookup) on a Manager
// whose Discover has not run says so and names the call to make, instead
// of claiming the directories were searched; after Discover the same
// name is found.
func TestOpenBeforeDiscover(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "both", "both 1,2 presign")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	t.Cleanup(func() { m.Close() })
	majors := manager.Majors[objectstorev1.ObjectStoreClient]{
		1: func(c *manager.Conn, _ manager.Info) (objectstorev1.ObjectStoreClient, error) {
			return objectstorev1.NewObjectStoreClient(c), nil
		},
	}
	_, err := manager.Dispense(ctxT(t), m, "objectstore", "both", majors)
	if err == nil {
		t.Fatal("Dispense before Discover found a plugin")
	}
	if msg := err.Error(); !strings.Contains(msg, "Discover has not run") || !strings.Contains(msg, "call Manager.Discover") || strings.Contains(msg, "searched "+dir) {
		t.Errorf("Dispense before Discover: %q; want it to say Discover has not run and what to call", msg)
	}
	if err := m.Discover(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Lookup("objectstore", "both"); err != nil {
		t.Errorf("Lookup after Discover: %v", err)
	}
	if _, err := m.Lookup("nokind", "x"); err == nil || strings.Contains(err.Error(), "Discover has not run") || !strings.Contains(err.Error(), "searched") {
		t.Errorf("Lookup of an unknown kind after Discover: %v; want the directories it searched", err)
	}
}

func TestCacheSkipsLaunchesUntilABinaryChanges(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "a", "x 1")
	b := writePlugin(t, dir, "b", "y 2")
	cache := filepath.Join(testutil.TempDir(t), "cache.json")
	cold := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache}
	if newManager(t, manager.Config{Sources: []manager.Source{cold.Dirs(dir)}}); cold.Launches() != 2 {
		t.Fatalf("cold discovery: %d launches, want 2", cold.Launches())
	}
	warmFinder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache}
	warm := newManager(t, manager.Config{Sources: []manager.Source{warmFinder.Dirs(dir)}})
	if warmFinder.Launches() != 0 {
		t.Errorf("warm discovery: %d launches, want 0", warmFinder.Launches())
	}
	for _, bin := range warm.Entries() {
		if !bin.Cached || bin.Err != nil {
			t.Errorf("%s: cached %v, err %v", bin.Path, bin.Cached, bin.Err)
		}
	}
	writePlugin(t, dir, "b", "z 2") // b changes: same size class, new content
	os.Chtimes(b, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	changedFinder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache}
	changed := newManager(t, manager.Config{Sources: []manager.Source{changedFinder.Dirs(dir)}})
	if changedFinder.Launches() != 1 {
		t.Errorf("after changing one binary: %d launches, want 1", changedFinder.Launches())
	}
	if _, err := changed.Lookup("objectstore", "z"); err != nil {
		t.Errorf("the changed binary's new description was not used: %v", err)
	}
}

// store dispenses a v2 client for name (v1 plugins are wrapped so that
// their calls still work: the test only uses v1 calls on them).
func store(t testing.TB, m *manager.Manager, name string) (*manager.Conn, manager.Info) {
	t.Helper()
	type pair struct {
		conn *manager.Conn
		info manager.Info
	}
	p, err := manager.Dispense(ctxT(t), m, "objectstore", name, manager.Majors[pair]{
		2: func(c *manager.Conn, i manager.Info) (pair, error) { return pair{c, i}, nil },
		1: func(c *manager.Conn, i manager.Info) (pair, error) { return pair{c, i}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return p.conn, p.info
}

func TestDispenseLatestFirst(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "both", "both 1,2 presign")
	writePlugin(t, dir, "old", "old 1")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	_, info := store(t, m, "both")
	if info.Major != 2 || info.Minor != 1 || info.Adapted || !info.Has("presign") {
		t.Errorf("both: %+v, want major 2.1, not adapted, with presign", info)
	}
	_, info = store(t, m, "old")
	if info.Major != 1 || !info.Adapted || info.Has("presign") {
		t.Errorf("old: %+v, want major 1, adapted, no presign", info)
	}
}

func TestIncompatibleNamesBothSidesAndARelease(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "new", "new 2")
	ix, err := compat.ParseIndex([]byte(`{"plugins":{"new":[
		{"version":"1.0.0","manifest":{"version":1,"metadata":{"kinds":{"objectstore":["1.0"]}}}},
		{"version":"1.5.2","manifest":{"version":1,"metadata":{"kinds":{"objectstore":["1.3"]}}}},
		{"version":"2.0.0","manifest":{"version":1,"metadata":{"kinds":{"objectstore":["2.0"]}}}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Releases: ix})
	_, err = manager.Dispense(ctxT(t), m, "objectstore", "new", manager.Majors[int]{1: func(*manager.Conn, manager.Info) (int, error) { return 1, nil }})
	var ie *manager.IncompatibleError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want *IncompatibleError", err)
	}
	for _, want := range []string{`"new" v1.0.0`, "speaks objectstore 2.1", "this host speaks objectstore majors [1]",
		"Plugin version v1.5.2 is the latest compatible version", `version = "~> 1.5.2"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if finder.Launches() != 1 {
		t.Errorf("%d launches: an incompatible plugin must not be started for use", finder.Launches())
	}
}

func initStore(t *testing.T, c *manager.Conn, cfg map[string]string) objectstorev2.ObjectStoreClient {
	t.Helper()
	cl := objectstorev2.NewObjectStoreClient(c)
	if _, err := cl.Init(ctxT(t), &objectstorev2.InitRequest{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	c.OnRestart(func(ctx context.Context, cc grpc.ClientConnInterface) error {
		_, err := objectstorev2.NewObjectStoreClient(cc).Init(ctx, &objectstorev2.InitRequest{Config: cfg})
		return err
	})
	return cl
}

func config(t *testing.T, cl objectstorev2.ObjectStoreClient) string {
	t.Helper()
	stream, err := cl.Get(ctxT(t), &objectstorev2.GetRequest{Key: "__config__"})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.Recv()
	if err != nil {
		t.Fatalf("reading the config back: %v", err)
	}
	return string(msg.GetChunk())
}

func TestRestartAfterCrashReplaysInit(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "p", "p 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	conn, _ := store(t, m, "p")
	cl := initStore(t, conn, map[string]string{"bucket": "b1"})
	if got := config(t, cl); got != "map[bucket:b1]" {
		t.Fatalf("config %q", got)
	}
	pid := conn.Pid()
	testutil.Kill(pid)
	waitExited(t, conn)
	if got := config(t, cl); got != "map[bucket:b1]" {
		t.Errorf("after the restart the plugin has config %q: Init was not replayed", got)
	}
	if conn.Pid() == pid || conn.Pid() == 0 {
		t.Errorf("pid %d after restart, was %d", conn.Pid(), pid)
	}
}

// waitExited waits, up to 10 s, until the manager has seen the plugin
// process behind conn exit (Pid answers 0): the crash a test caused is
// then one the next call finds.
func waitExited(t *testing.T, conn *manager.Conn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for conn.Pid() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("plugin still running 10 s after SIGKILL")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCallInFlightDuringCrashFails(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "p", "p 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	conn, _ := store(t, m, "p")
	cl := objectstorev2.NewObjectStoreClient(conn)
	stream, err := cl.Put(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	stream.Send(&objectstorev2.PutRequest{Part: &objectstorev2.PutRequest_Key{Key: "k"}})
	testutil.Kill(conn.Pid())
	time.Sleep(50 * time.Millisecond)
	stream.Send(&objectstorev2.PutRequest{Part: &objectstorev2.PutRequest_Chunk{Chunk: []byte("data")}})
	if _, err := stream.CloseAndRecv(); err == nil {
		t.Fatal("a Put whose plugin died mid-stream reported success")
	}
	ex, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"})
	if err != nil || ex.GetExists() {
		t.Errorf("after restart: exists %v, %v; the failed Put must not have stored anything", ex.GetExists(), err)
	}
}

func TestNoRestartAfterClose(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "p", "p 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	conn, _ := store(t, m, "p")
	cl := objectstorev2.NewObjectStoreClient(conn)
	if _, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	pid := conn.Pid()
	launches := finder.Launches()
	m.Close()
	if _, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"}); !errors.Is(err, manager.ErrClosed) {
		t.Errorf("call after Close: %v, want ErrClosed", err)
	}
	if finder.Launches() != launches {
		t.Error("a closed manager started a process")
	}
	if testutil.Exists(pid) {
		t.Errorf("plugin %d still running after Close", pid)
	}
}

func TestCallsRacingRestarts(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "p", "p 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	conn, _ := store(t, m, "p")
	cl := objectstorev2.NewObjectStoreClient(conn)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var mu sync.Mutex
	var ok, failed int
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := cl.Exists(ctx, &objectstorev2.ExistsRequest{Key: "k"})
				cancel()
				mu.Lock()
				if err == nil {
					ok++
				} else {
					failed++
				}
				mu.Unlock()
			}
		}()
	}
	for range 3 {
		time.Sleep(150 * time.Millisecond)
		if pid := conn.Pid(); pid > 0 {
			testutil.Kill(pid)
		}
	}
	time.Sleep(150 * time.Millisecond)
	close(stop)
	wg.Wait()
	if _, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatalf("after the storm: %v", err)
	}
	t.Logf("%d calls succeeded, %d failed across 3 crashes; %d launches", ok, failed, finder.Launches())
	if ok == 0 {
		t.Error("no call succeeded")
	}
	if finder.Launches() > 1+1+3 {
		t.Errorf("%d launches for 3 crashes: restarts were not shared", finder.Launches())
	}
}

func TestRestartsGiveUp(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "its plugin is a shell script, which Windows does not run")
	dir := testutil.TempDir(t)
	_, crashAtStart := writeCrashingPlugin(t, dir, "p", "p 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Restart: manager.RestartPolicy{Max: 2}})
	conn, _ := store(t, m, "p")
	cl := objectstorev2.NewObjectStoreClient(conn)
	if _, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	crashAtStart()
	testutil.Kill(conn.Pid())
	time.Sleep(50 * time.Millisecond)
	var err error
	for range 5 {
		_, err = cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"})
		if err != nil && strings.Contains(err.Error(), "gave up") {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "crashed 3 times in a row; gave up") || !strings.Contains(err.Error(), "segfault at start") {
		t.Errorf("err = %v; want a give-up error carrying the last failure", err)
	}
}

func TestPinnedChecksum(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it rewrites a plugin binary while it runs, which Windows forbids")
	dir := testutil.TempDir(t)
	bin := writePlugin(t, dir, "p", "p 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, Pins: map[string]string{"p": strings.Repeat("0", 64)}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	var pe *host.ChecksumError
	if bins := m.Entries(); len(bins) != 1 || !errors.As(bins[0].Err, &pe) {
		t.Fatalf("binaries: %+v", bins)
	}
	if finder.Launches() != 0 {
		t.Errorf("a binary with the wrong checksum was launched")
	}

	// Right pin at discovery; the binary is then tampered with.
	sum := m.Entries()[0].SHA256
	m2F := &manager.Finder{Launch: host.Command{Cookie: cookie}, Pins: map[string]string{bin: sum}}
	m2 := newManager(t, manager.Config{Sources: []manager.Source{m2F.Dirs(dir)}})
	conn, _ := store(t, m2, "p")
	writeFile(t, bin, "#!/bin/sh\necho pwned > /dev/null\nexit 1\n", 0o755)
	launches := m2F.Launches()
	_, err := objectstorev2.NewObjectStoreClient(conn).Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"})
	if !errors.As(err, &pe) {
		t.Errorf("call on a tampered binary: %v, want a *PinError", err)
	}
	if m2F.Launches() != launches {
		t.Error("the tampered binary was run")
	}
}

// TestPinNotTrustedFromCache: a pinned binary swapped for another of the
// same size, with its mtime restored, is caught at the next discovery even
// though the cache's size and mtime still match.
func TestPinNotTrustedFromCache(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	bin := writePlugin(t, dir, "p", "p 2")
	cache := filepath.Join(testutil.TempDir(t), "cache.json")
	firstF := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache}
	first := newManager(t, manager.Config{Sources: []manager.Source{firstF.Dirs(dir)}})
	sum := first.Entries()[0].SHA256
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(bin)
	evil := []byte(strings.Replace(string(old), "p 2", "q 2", 1)) // same size
	if len(evil) != len(old) {
		t.Fatal("the swapped file must have the same size")
	}
	writeFile(t, bin, string(evil), 0o755)
	if err := os.Chtimes(bin, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache, Pins: map[string]string{filepath.Base(bin): sum}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	var pe *host.ChecksumError
	if bins := m.Entries(); len(bins) != 1 || !errors.As(bins[0].Err, &pe) {
		t.Fatalf("a same-size swap with the mtime restored passed the pin on the cache's word: %+v", bins)
	}
	if finder.Launches() != 0 {
		t.Error("the swapped binary was launched")
	}
}

// TestMalformedCacheIsRebuilt: a minimal, foreign or broken cache file is
// ignored with a warning and rebuilt, never a panic.
func TestMalformedCacheIsRebuilt(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "a", "x 1")
	for _, content := range []string{
		`{"version":1}`,
		`{"version":1,"entries":null}`,
		`{"version":1,"entries":{"/x":null}}`,
		`{"version":1,"entries":{"relative":{"sha256":"00"}}}`,
		`{"version":7,"entries":{}}`,
		`[1,2,3]`,
		"not json at all",
		"",
	} {
		cache := filepath.Join(testutil.TempDir(t), "cache.json")
		writeFile(t, cache, content, 0o600)
		var logs testutil.Buffer
		finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache, Host: host.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}}
		m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if bins := m.Entries(); len(bins) != 1 || bins[0].Err != nil {
			t.Errorf("cache %q: binaries %+v", content, bins)
		}
		if content != `{"version":1}` && content != `{"version":1,"entries":null}` && !strings.Contains(logs.String(), "plugin cache ignored") {
			t.Errorf("cache %q: no warning logged:\n%s", content, logs.String())
		}
		warmFinder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache}
		newManager(t, manager.Config{Sources: []manager.Source{warmFinder.Dirs(dir)}})
		if warmFinder.Launches() != 0 {
			t.Errorf("cache %q was not rebuilt: %d launches on the next discovery", content, warmFinder.Launches())
		}
	}
}

// TestSharedCacheKeepsEveryEntry: two managers of different directories
// that share one cache file do not lose each other's entries.
func TestSharedCacheKeepsEveryEntry(t *testing.T) {
	t.Parallel()
	d1, d2 := testutil.TempDir(t), testutil.TempDir(t)
	writePlugin(t, d1, "a", "x 1")
	writePlugin(t, d2, "b", "y 1")
	cache := filepath.Join(testutil.TempDir(t), "cache.json")
	var wg sync.WaitGroup
	for _, d := range []string{d1, d2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache}
			m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(d)}})
			defer m.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := m.Discover(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	bothFinder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache}
	newManager(t, manager.Config{Sources: []manager.Source{bothFinder.Dirs(d1, d2)}})
	if bothFinder.Launches() != 0 {
		t.Errorf("%d launches: an entry of one manager was lost by the other's write", bothFinder.Launches())
	}
}

// TestDiscoverHonoursContextWhileHashing: a huge sparse "binary" must not
// hold Discover past its deadline.
func TestDiscoverHonoursContextWhileHashing(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	huge := filepath.Join(dir, "huge")
	f, err := os.OpenFile(huge, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 30); err != nil { // 64 GiB of holes: minutes to hash
		t.Fatal(err)
	}
	f.Close()
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Discover(ctx) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Discover still hashing 30 s after its 500 ms deadline")
	}
	bins := m.Entries()
	if len(bins) != 1 || !errors.Is(bins[0].Err, context.DeadlineExceeded) {
		t.Errorf("the huge binary: %+v, want the deadline as its error", bins)
	}
}

// TestCancelledCallsReturnAtOnce: a call the caller cancels returns with
// the cancellation, without the crash check's wait (it used to add 100 ms
// to every cancelled call). Thirty cancelled streams must take well under
// the 3 s that 100 ms each would cost.
func TestCancelledCallsReturnAtOnce(t *testing.T) {
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "p", "p 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	conn, _ := store(t, m, "p")
	cl := objectstorev2.NewObjectStoreClient(conn)
	put, err := cl.Put(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	put.Send(&objectstorev2.PutRequest{Part: &objectstorev2.PutRequest_Key{Key: "big"}})
	put.Send(&objectstorev2.PutRequest{Part: &objectstorev2.PutRequest_Chunk{Chunk: make([]byte, 4<<20)}})
	if _, err := put.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
	const n = 30
	begin := time.Now()
	for range n {
		ctx, cancel := context.WithCancel(context.Background())
		stream, err := cl.Get(ctx, &objectstorev2.GetRequest{Key: "big"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != nil {
			t.Fatal(err)
		}
		cancel()
		for {
			if _, err = stream.Recv(); err != nil {
				break
			}
		}
		if status.Code(err) != codes.Canceled {
			t.Fatalf("a cancelled stream ended with %v, want Canceled", err)
		}
	}
	if took := time.Since(begin); took >= n*100*time.Millisecond {
		t.Errorf("%d cancelled calls took %v: the crash check still waits on cancelled calls", n, took)
	}
}
