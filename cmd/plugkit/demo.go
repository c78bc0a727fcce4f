package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
)

func init() {
	commands["demo"] = command{
		summary: "build the example object-store plugins and use them through the manager",
		run:     runDemo,
	}
}

// demoPlugins are the example plugins the demo builds, by package path.
var demoPlugins = []string{"memory", "fs", "future"}

const examplePluginPkg = "github.com/plugkit/plugkit/examples/objectstore/plugins/"

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo", "plugkit demo [--verbose]", stderr)
	verbose := fs.Bool("verbose", false, "show the plugins' log records")
	if _, err := parseArgs(fs, args); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := demo(ctx, stdout, stderr, *verbose); err != nil {
		fmt.Fprintf(stderr, "plugkit demo: %v\n", err)
		return 1
	}
	return 0
}

// demoStep prints the heading of a step of the demo.
type demoStep func(format string, args ...any)

func demo(ctx context.Context, out, stderr io.Writer, verbose bool) error {
	work, err := os.MkdirTemp("", "plugkit-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	pluginDir, dataDir := filepath.Join(work, "plugins"), filepath.Join(work, "data")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		return err
	}

	tel, logger, ctx, endTracing := demoTracing(ctx, cliLogger(verbose, stderr), out)
	defer endTracing()
	step := demoStep(func(format string, args ...any) { fmt.Fprintf(out, "\n==> "+format+"\n", args...) })
	step("building the example plugins (%v) into %s", demoPlugins, pluginDir)
	for _, name := range demoPlugins {
		if _, err := buildPlugin(ctx, out, pluginDir, name); err != nil {
			return err
		}
	}

	// Each manager has a Finder of its own: the second one finds the
	// answers in the cache file, not in the first one's memory.
	upgrades := make(chan []manager.UpgradeResult, 8) // the refreshes of the upgrade step's Watch
	newManager := func() (*manager.Manager, *manager.Finder) {
		finder := &manager.Finder{
			CacheFile: filepath.Join(work, "describe-cache.json"),
			Launch:    host.Command{Cookie: objectstore.Cookie},
			Host:      host.Options{Logger: logger, Telemetry: tel},
		}
		return manager.New(manager.Config{
			Sources:   []manager.Source{finder.Dirs(pluginDir)},
			Logger:    logger,
			Telemetry: tel,
			Releases:  objectstore.Releases(),
			Restart:   manager.RestartPolicy{Backoff: 50 * time.Millisecond},
			Upgrade:   manager.UpgradePolicy{Probation: demoProbation, Drain: demoDrain},
			Watch:     manager.WatchPolicy{Debounce: demoDebounce, OnRefresh: func(r []manager.UpgradeResult, _ error) { upgrades <- r }},
		}), finder
	}
	m, finder := newManager()
	defer m.Close()
	step("discovering plugins (each binary is started once and asked to Describe itself, in parallel)")
	took, err := demoDiscover(ctx, m)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "    %d launches in %v\n\n", finder.Launches(), took.Round(time.Millisecond))
	printTable(indent(out), m.Entries())
	fsStore, err := demoStores(ctx, out, step, m, dataDir)
	if err != nil {
		return err
	}
	if err := demoCrash(ctx, out, step, fsStore); err != nil {
		return err
	}
	step("discovering again: unchanged binaries come from the cache")
	m2, finder2 := newManager()
	defer m2.Close()
	if took, err = demoDiscover(ctx, m2); err != nil {
		return err
	}
	fmt.Fprintf(out, "    %d launches, %v\n", finder2.Launches(), took.Round(100*time.Microsecond))
	m2.Close()
	if err := m.Close(); err != nil {
		return err
	}
	if err := demoMatrix(ctx, out, step, pluginDir); err != nil {
		return err
	}
	m3, _ := newManager()
	defer m3.Close()
	if err := demoUpgrade(ctx, out, step, m3, pluginDir, dataDir, work, upgrades); err != nil {
		return err
	}
	if err := m3.Close(); err != nil {
		return err
	}
	step("closing: every plugin process is stopped and reaped; %s removed", work)
	return nil
}

// demoDiscover runs m's Discover and says how long it took.
func demoDiscover(ctx context.Context, m *manager.Manager) (time.Duration, error) {
	start := time.Now()
	err := m.Discover(ctx)
	return time.Since(start), err
}

// demoStores uses the three example plugins: fs directly, memory through
// the adapter, and future, which this host cannot use. It returns the fs
// store.
func demoStores(ctx context.Context, out io.Writer, step demoStep, m *manager.Manager, dataDir string) (objectstore.Store, error) {
	step("example.com/fs speaks objectstore v2.1: used directly, files in %s", dataDir)
	fsStore, err := objectstore.Open(ctx, m, "example.com/fs")
	if err == nil {
		err = fsStore.Init(ctx, map[string]string{"dir": dataDir})
	}
	if err == nil {
		err = roundTrip(ctx, out, fsStore)
	}
	if err != nil {
		return nil, err
	}
	url, err := fsStore.Presign(ctx, "reports/q3.txt")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "    presign reports/q3.txt -> %s  (capability %q of v2.1)\n", url, objectstore.CapPresign)
	files, _ := filepath.Glob(filepath.Join(dataDir, "*", "*"))
	for _, f := range files {
		fi, _ := os.Stat(f)
		rel, _ := filepath.Rel(dataDir, f)
		fmt.Fprintf(out, "    on disk: %-28s %9d bytes\n", rel, fi.Size())
	}

	step("example.com/memory speaks only objectstore v1: the host gets the same v2 interface through the v1->v2 adapter")
	memStore, err := objectstore.Open(ctx, m, "example.com/memory")
	if err == nil {
		err = memStore.Init(ctx, map[string]string{"bucket": "demo"})
	}
	if err == nil {
		err = roundTrip(ctx, out, memStore)
	}
	if err != nil {
		return nil, err
	}
	if _, err := memStore.Presign(ctx, "reports/q3.txt"); errors.Is(err, objectstore.ErrNoCapability) {
		fmt.Fprintf(out, "    presign -> refused: %v\n", err)
	}

	step("example.com/future speaks only objectstore v3, which this host does not")
	_, err = objectstore.Open(ctx, m, "example.com/future")
	if err == nil {
		return nil, errors.New("the future plugin was accepted; it should not have been")
	}
	for _, line := range bytes.Split(bytes.TrimSpace([]byte(err.Error())), []byte("\n")) {
		fmt.Fprintf(out, "    %s\n", line)
	}
	return fsStore, nil
}

// demoCrash kills the fs plugin's process and calls it again.
func demoCrash(ctx context.Context, out io.Writer, step demoStep, fsStore objectstore.Store) error {
	step("killing the fs plugin process mid-way (SIGKILL), then calling again")
	oldPid := objectstore.Pid(fsStore)
	if err := killProcess(oldPid); err != nil {
		return err
	}
	fmt.Fprintf(out, "    killed pid %d\n", oldPid)
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	data, err := fsStore.Get(ctx, "reports/q3.txt")
	if err != nil {
		return fmt.Errorf("the call after the crash failed: %w", err)
	}
	fmt.Fprintf(out, "    get reports/q3.txt -> %q in %v: the plugin was restarted (pid %d) and Init replayed transparently\n",
		data, time.Since(start).Round(time.Millisecond), objectstore.Pid(fsStore))
	return nil
}

// roundTrip stores, reads back, stats and copies real data through a store.
func roundTrip(ctx context.Context, out io.Writer, s objectstore.Store) error {
	info := s.Info()
	fmt.Fprintf(out, "    %s %s v%s: serving major %d.%d (adapted: %v), pid %d\n", info.Kind, info.Name, info.PluginVersion, info.Major, info.Minor, info.Adapted, objectstore.Pid(s))
	big := make([]byte, 4<<20)
	rand.Read(big)
	objects := map[string][]byte{"reports/q3.txt": []byte("revenue up, costs down\n"), "blobs/random.bin": big}
	for _, key := range []string{"reports/q3.txt", "blobs/random.bin"} {
		if err := s.Put(ctx, key, objects[key]); err != nil {
			return err
		}
		got, err := s.Get(ctx, key)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, objects[key]) {
			return fmt.Errorf("%s came back different", key)
		}
		st, err := s.Stat(ctx, key)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "    put+get %-18s %8d bytes, identical; stat sha256 %.16s...\n", key, st.Size, st.SHA256)
	}
	if err := s.Copy(ctx, "reports/q3.txt", "reports/q3-copy.txt"); err != nil {
		return err
	}
	keys, err := s.List(ctx, "reports/")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "    copy reports/q3.txt -> reports/q3-copy.txt; list reports/ = %v\n", keys)
	return nil
}

// indent prefixes every line written to w with four spaces.
func indent(w io.Writer) io.Writer { return &indenter{w: w, start: true} }

type indenter struct {
	w     io.Writer
	start bool
}

func (i *indenter) Write(p []byte) (int, error) {
	for _, b := range p {
		if i.start {
			i.w.Write([]byte("    "))
		}
		i.w.Write([]byte{b})
		i.start = b == '\n'
	}
	return len(p), nil
}

// buildPlugin builds an example plugin with the go command into dir,
// saying on out which one before it starts (a first build takes a while).
func buildPlugin(ctx context.Context, out io.Writer, dir, name string) (string, error) {
	bin := filepath.Join(dir, name)
	fmt.Fprintf(out, "    go build %s%s (the first build of a plugin can take a minute)\n", examplePluginPkg, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, examplePluginPkg+name)
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building plugin %s (the demo runs from a plugkit checkout with Go installed): %v\n%s", name, err, errBuf.String())
	}
	return bin, nil
}

// killProcess kills process pid at once, as a crash would (SIGKILL;
// TerminateProcess on Windows).
func killProcess(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
