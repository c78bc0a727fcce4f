package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/hostwire"
	"github.com/plugkit/plugkit/wire"
)

// Finder is the finding side of the manager: how plugins are launched,
// hashed, pinned, described and cached. Its Dirs, Files, Remotes and
// RemotesFile are the built-in sources; a Source of your own lists its
// plugins and hands them to Describe and Start, and so gets the same
// cache, pins and fast path. Launch.Cookie is required; every other field
// has a useful zero value. One Finder may serve several sources and
// Managers (they then share its cache); it must not be copied after
// first use.
type Finder struct {
	// Launch is the template of every binary's launch, for Describe and
	// for use: Cookie (the magic cookie the plugins expect; required),
	// and as needed Runner (a sandbox.Runner isolates every plugin),
	// InheritEnv (by default plugins inherit the host's whole
	// environment, every secret in it included), Env, Args, Dir, Listen,
	// MultiplexBroker, Output and Timeouts. The Finder sets Path and
	// SHA256 (from Pins) itself, for each binary.
	Launch host.Command
	// Host is the template of every plugin's host options: Security (for
	// binaries; a Remote says its own), Logger (nil means
	// slog.Default()), Telemetry, MaxMessageSize and DialOptions (a
	// Remote's own are added to them). The Finder sets Versions and Name
	// itself, for each plugin.
	Host host.Options
	// Guests runs the WebAssembly (wasip1) plugins it finds (.wasm
	// files, recognised by their content) inside this process: a
	// wasmhost.Runtime, which its caller closes. Nil refuses them, saying
	// so; a program that sets none links no WebAssembly runtime. Launch's
	// Runner, Listen and MultiplexBroker do not apply to them; InheritEnv
	// names the host's variables they get (none when nil).
	Guests host.GuestRunner
	// Pins maps a plugin binary (its path, or its base name) to the hex
	// SHA-256 it must have. A binary that does not match is refused before
	// it runs, at discovery and at every start.
	Pins map[string]string
	// CacheFile keeps Describe answers between runs (JSON), and the
	// remote plugins' beside it (CacheFile + ".remotes"). Empty keeps
	// them for the Finder's life only. A cache file that is a symbolic
	// link, a FIFO, a device or larger than 16 MiB is not read: the
	// Finder logs a warning naming it, describes every binary afresh, and
	// saves a regular file in its place (never through the link).
	CacheFile string
	// Parallelism bounds how many binaries are launched for Describe at
	// once (and hashed at once, at most one per CPU); 0 means twice the
	// number of CPUs: a launch spends part of its time waiting on the
	// plugin's process (its handshake, Describe, its exit), which another
	// launch fills.
	Parallelism int
	// DescribeTimeout bounds one plugin's start and Describe; 0 means
	// describe.DefaultTimeout.
	DescribeTimeout time.Duration
	// KeepDescribed keeps each process started to describe a plugin
	// running for the plugin's first use, instead of stopping it, so that
	// a manager that uses every plugin it finds (a test, the conformance
	// matrix) starts each plugin once. A kept process that is not used
	// runs until the Manager's next Discover or Close. Without it, a
	// plugkit catalog plugin is described without serving (it writes its
	// description and exits: see handshake.EnvDescribe), which is
	// cheaper; with it, every plugin is started and described over gRPC.
	KeepDescribed bool
	// Names is the pattern (filepath.Match, on the base name) a file in
	// one of Dirs' directories must match to be a plugin, as Terraform
	// runs only terraform-provider-*: "plugkit-*", say. A file that does
	// not match is never run, unless it is a Go program that links
	// plugkit's module (its build info, read without running it, says
	// so). Empty takes every executable (the default of old: every
	// program in the directory is started to ask what it is). Files
	// names plugins itself and is not filtered. A log line per directory
	// counts the files skipped.
	Names string
	// PollInterval is how often Dirs, Files and RemotesFile are looked at
	// for changes by a Manager's Watch where the system does not report
	// them (systems other than Linux; Linux when inotify's limits are
	// reached); 0 means DefaultPollInterval.
	PollInterval time.Duration

	launches atomic.Int64
	cache    fileCache         // the Describe answers of binaries
	remotes  remoteCache       // the remote plugins' answers
	hashed   func(path string) // a file is about to be read and hashed; set by tests alone
	launched func(path string) // a hashed file is about to be launched for Describe; set by tests alone
}

// Dirs is the source of the plugin binaries in dirs: every executable in
// each directory, described once (Describe answers are cached by path,
// size, mtime and SHA-256, in CacheFile when set). When two binaries
// implement the same (kind, name), the one in the earlier directory
// wins, and within a directory the lexically first path.
func (f *Finder) Dirs(dirs ...string) Source { return fileSource{f: f, dirs: dirs} }

// Files is the source of the plugin binaries at paths, in that order of
// precedence, described and cached as Dirs does.
func (f *Finder) Files(paths ...string) Source { return fileSource{f: f, files: paths} }

// Launches counts the plugin processes the Finder has started, for
// Describe and for use.
func (f *Finder) Launches() int64 { return f.launches.Load() }

// fileSource is Dirs and Files.
type fileSource struct {
	f           *Finder
	dirs, files []string
}

func (s fileSource) String() string { return strings.Join(append(s.dirs, s.files...), ", ") }

func (s fileSource) Find(ctx context.Context) ([]Entry, error) {
	if len(s.dirs) == 0 && len(s.files) == 0 {
		return nil, errors.New("manager: Dirs or Files names nothing: name the directories that hold plugins, or the plugin binaries")
	}
	paths, err := s.f.binaryPaths(s.dirs, s.files)
	if err != nil {
		return nil, err
	}
	return s.f.Describe(ctx, paths), nil
}

func (s fileSource) Connect(ctx context.Context, e Entry) (*host.Client, error) {
	return s.f.Start(ctx, e)
}

// binaryPaths lists the absolute paths of the plugin binaries in dirs (in
// order; within a directory, lexically: those that identify as plugins,
// by Names), then files.
func (f *Finder) binaryPaths(dirs, files []string) ([]string, error) {
	if _, err := filepath.Match(f.Names, ""); err != nil {
		return nil, fmt.Errorf("manager: Finder.Names %q: %w: write a filepath.Match pattern, such as \"plugkit-*\"", f.Names, err)
	}
	var paths []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("manager: reading plugin directory: %w", err)
		}
		skipped := 0
		for _, e := range entries {
			if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p, err := filepath.Abs(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			if !f.isPlugin(p) {
				skipped++
				continue
			}
			paths = append(paths, p)
		}
		if skipped > 0 {
			f.logger().Info("plugkit: skipped files that do not identify as plugins; they were not run", "dir", dir, "skipped", skipped, "names", f.Names,
				"fix", "name a plugin to match Finder.Names (the CLI's --names), or build it with plugkit's plugin module")
		}
	}
	for _, f := range files {
		p, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// fileValue is the Value of an entry Describe made: whether the file is
// a WebAssembly module, and the process kept for its first use.
type fileValue struct {
	kept
	wasm bool
}

// kept holds a process started to describe a plugin and kept for its
// first use (Finder.KeepDescribed): the first Connect takes it; Close
// stops it when nothing did.
type kept struct{ c atomic.Pointer[host.Client] }

func (k *kept) take() *host.Client { return k.c.Swap(nil) }

// Close stops the kept process, if no Connect took it.
func (k *kept) Close() error {
	if c := k.take(); c != nil {
		c.Close()
	}
	return nil
}

// Start starts the plugin binary of e (an entry Describe made, or any
// entry whose Path is a binary) for use: the process kept by
// KeepDescribed the first time, if any, or a new one, pin checked on the
// file it executes. Every start also checks, on that open file, the
// SHA-256 e was described with (e.SHA256, when set), so that a file
// replaced since never runs under the description of another: it is
// refused with a *host.ChecksumError whose Want is e.SHA256, and the
// Finder's cache forgets the path, so that the next Describe hashes the
// file afresh.
func (f *Finder) Start(ctx context.Context, e Entry) (*host.Client, error) {
	v, ok := e.Value.(*fileValue)
	if ok {
		if c := v.take(); c != nil {
			return c, nil
		}
	} else {
		v = &fileValue{wasm: hostwire.IsWasm(e.Path)}
	}
	c, err := f.start(ctx, e.Path, f.telemetryOf(e.Description.GetPluginVersion()), v.wasm, e.SHA256)
	if _, ok := changedSince(err, e.SHA256); ok {
		f.forget(e.Path)
	}
	return c, err
}

// changedSince reports whether err refused a file because it no longer
// has sum, the SHA-256 it was described (or hashed) with, and returns
// the refusal.
func changedSince(err error, sum string) (*host.ChecksumError, bool) {
	var ce *host.ChecksumError
	if sum == "" || !errors.As(err, &ce) || !strings.EqualFold(ce.Want, sum) {
		return nil, false
	}
	return ce, true
}

// start launches the binary at path, counting the launch unless its pin
// refused it (then it never ran); tel is its telemetry (telemetryOf,
// or describeTelemetry when it is launched to be described); wasm says it
// is a WebAssembly module (runnable); described, when set, is the SHA-256
// the file must have where it has no pin (the one it was described, or
// hashed, with), checked on the open file it executes.
func (f *Finder) start(ctx context.Context, path string, tel host.Telemetry, wasm bool, described string) (*host.Client, error) {
	cmd, opts := f.hostConfig(path, wasm)
	cmd.SHA256 = cmp.Or(cmd.SHA256, described)
	opts.Telemetry = tel
	c, err := host.Start(ctx, cmd, opts)
	f.countLaunch(err)
	return c, err
}

// countLaunch counts a launch that ended in err, unless its pin refused
// the binary (then it never ran).
func (f *Finder) countLaunch(err error) {
	var ce *host.ChecksumError
	if !errors.As(err, &ce) {
		f.launches.Add(1)
	}
}

// hostConfig is the launch of the binary at path (a WebAssembly module
// when wasm): Launch and Host with what the Finder sets itself.
func (f *Finder) hostConfig(path string, wasm bool) (host.Command, host.Options) {
	cmd := f.Launch
	cmd.Path = path
	cmd.SHA256, _ = f.pin(path) // host.Start hashes and executes the same open file
	if wasm && f.Guests != nil {
		cmd.Runner = f.Guests
	}
	opts := f.Host
	opts.Versions = []int{wire.CatalogProtocolVersion}
	opts.Name = "" // host.Start's default: the binary's base name
	opts.Logger = f.logger()
	// Whether the plugin answered a failed call tells its own error from
	// a crash without waiting (process.observe).
	opts.DialOptions = append(slices.Clip(opts.DialOptions), answerDialOption)
	return cmd, opts
}

// pin returns a binary's pinned checksum, by path or base name.
func (f *Finder) pin(path string) (string, bool) {
	want, ok := f.Pins[path]
	if !ok {
		want, ok = f.Pins[filepath.Base(path)]
	}
	return want, ok
}

// checkPin compares a binary's checksum with its pin, if it has one.
func (f *Finder) checkPin(path, sum string) error {
	want, ok := f.pin(path)
	if !ok || strings.EqualFold(want, sum) {
		return nil
	}
	return &host.ChecksumError{Path: path, Want: want, Got: sum}
}

func (f *Finder) logger() *slog.Logger { return cmp.Or(f.Host.Logger, slog.Default()) }

func (f *Finder) parallelism() int {
	if f.Parallelism > 0 {
		return f.Parallelism
	}
	return 2 * runtime.NumCPU()
}

// report reports a Finder's event of a plugin (refused by a pin) through
// Host.Telemetry, and as a log record.
func (f *Finder) report(e host.Event) { reportEvent(f.Host.Telemetry, f.logger(), e) }

// describeRun is what the binaries of one Describe share: the cache as
// it was when it began, their hashes, and the launch slots.
type describeRun struct {
	cache  map[string]*cacheEntry
	hashes *hashes
	launch chan struct{}
}

// Describe describes the plugin binaries at paths (absolute), in
// parallel, as Dirs and Files do, and saves the cache: an unchanged
// binary's description comes from the cache without a launch; a pinned
// binary is hashed and checked before it runs; a plugkit catalog plugin
// writes its description and exits (unless KeepDescribed); any other is
// started and asked over gRPC. The entries are in the order of paths,
// each with its description or the reason it cannot be used. Hashing and
// launching are two stages with slots of their own (Parallelism
// launches; as many hashes, at most one per CPU): a binary's own launch
// waits for its hash and pin check, since the sum is what the pin is
// checked against and what the cache records. With KeepDescribed, an
// entry's Value holds the process kept for the plugin's first use: Start
// takes it; a Manager closes the Values it no longer needs, and any other
// caller closes them itself (they are io.Closers).
func (f *Finder) Describe(ctx context.Context, paths []string) []Entry {
	n := f.parallelism()
	run := &describeRun{cache: f.loadCache(ctx), hashes: newHashes(min(n, runtime.NumCPU()), f.hashed), launch: make(chan struct{}, n)}
	bins := make([]*Entry, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() { bins[i] = f.describe(ctx, p, run) })
	}
	wg.Wait()
	f.saveCache(ctx, bins)
	out := make([]Entry, len(bins))
	for i, b := range bins {
		out[i] = *b
	}
	return out
}
