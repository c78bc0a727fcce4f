package wasmhost

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/guestconn"
	"github.com/plugkit/plugkit/internal/hostwire"
)

// DefaultMemoryLimit is a guest's memory limit when Config.MemoryLimit is
// 0: 512 MiB of linear memory.
const DefaultMemoryLimit = 512 << 20

// pageSize is the size of a WebAssembly memory page.
const pageSize = 64 << 10

// Config says what guests may use. The zero value grants nothing but
// DefaultMemoryLimit of memory and compiles in memory only.
type Config struct {
	// Dirs are the host directories a guest sees; none by default, and
	// then every file access fails.
	Dirs []Dir
	// MemoryLimit bounds a guest's linear memory, in bytes (rounded down
	// to 64 KiB pages); 0 means DefaultMemoryLimit. A guest that needs
	// more ends with "out of memory" (a *MemoryError) and the host goes
	// on.
	MemoryLimit int64
	// CPUBudget bounds how long a guest may keep its one thread busy (a
	// call that computes, or spins forever) without answering the host's
	// health check, which the host sends every CPUBudget; past it the
	// host stops the guest (host.BudgetError). 0 means no bound.
	CPUBudget time.Duration
	// CacheDir is where compiled modules are kept across processes
	// (wazero's compilation cache): a cold compile of a 30 MB module
	// takes seconds, a cached one a fraction of that. Empty keeps them
	// in memory, for the Runtime's life, only.
	CacheDir string
	// CacheBytes bounds what CacheDir holds: when the Runtime opens the
	// cache and after each compile, the compiled modules used longest
	// ago are removed until the rest fit (the newest always stays; a
	// removed one is compiled again when next needed). A compiled module
	// is about three times its .wasm file. 0 means DefaultCacheBytes;
	// negative, no bound.
	CacheBytes int64
	// Interpret runs guests with wazero's interpreter instead of
	// compiling them to machine code: a module is ready about ten times
	// sooner (a second, not ten, for a 30 MB one), and its calls run
	// several times slower. For tests, and for plugins started once and
	// called little. The compilation cache does not apply.
	Interpret bool
	// Limits bound what a module may declare (its size, functions,
	// locals, blocks), checked before it is compiled; the zero value
	// takes the defaults, which a Go module is well inside.
	Limits Limits
	// CompileTimeout bounds a module's compile, and the context given to
	// Compile or host.Start bounds it too; 0 means DefaultCompileTimeout.
	CompileTimeout time.Duration
	// SnapshotBytes bounds the memory the Runtime keeps in snapshots of
	// guests after their init (a module built with -buildmode=c-shared
	// starts from one: see docs/wasm.md); past it the oldest go. 0 means
	// DefaultSnapshotBytes; negative keeps none, and every start runs the
	// guest's init.
	SnapshotBytes int64
}

// Dir grants a guest one host directory. Every path the guest names
// there resolves beneath HostPath: one through a symbolic link that
// points out of it fails with EPERM.
type Dir struct {
	// HostPath is the directory on the host.
	HostPath string
	// GuestPath is where the guest sees it; empty means HostPath. A
	// guest's paths are "/"-separated: on Windows, set it (a C:\ path
	// is no guest's).
	GuestPath string
	// Writable lets the guest create, change and remove files in it;
	// otherwise it is read-only.
	Writable bool
}

// Runtime runs WebAssembly plugins for host.Start (it is a
// host.GuestRunner). It compiles each module once and keeps it; Close
// releases it all. A Runtime is safe for concurrent use.
type Runtime struct {
	cfg Config

	once    sync.Once
	trimMu  sync.Mutex // one trimCache at a time
	rt      wazero.Runtime
	initErr error

	mu       sync.Mutex
	seed     maphash.Seed
	compiled map[uint64][]compiledModule           // by maphash of the module
	shapes   map[wazero.CompiledModule]moduleShape // what validate found (limits.go)
	files    map[string]fileModule                 // by the path StartGuest read
	reads    atomic.Int32                          // module files read (a test hook)
	running  atomic.Int32                          // guests started and not yet ended
	guests   map[*guest]struct{}
	snaps    snapshots
	restores atomic.Int32 // guests started from a snapshot (a test hook)
	// cleanRestores are those of them started with a data-less module (a
	// test hook).
	cleanRestores atomic.Int32
	// variants are the reactors' data-less forms (snapshot.go), compiled
	// in the background until closing ends (Close).
	variants   map[wazero.CompiledModule]*variant
	background sync.WaitGroup
	compiling  atomic.Int32 // compiles under way, abandoned ones included (a test hook)
	closing    context.Context
	close      context.CancelFunc
	closed     bool // Close was called
}

// New returns a Runtime with cfg.
func New(cfg Config) *Runtime {
	r := &Runtime{cfg: cfg, seed: maphash.MakeSeed(), compiled: make(map[uint64][]compiledModule), shapes: make(map[wazero.CompiledModule]moduleShape), files: make(map[string]fileModule), guests: make(map[*guest]struct{}), variants: make(map[wazero.CompiledModule]*variant)}
	r.closing, r.close = context.WithCancel(context.Background())
	return r
}

// errNotWasm reports a Runtime asked to launch something else.
var errNotWasm = errors.New("wasmhost: the plugin is not a WebAssembly module (no \"\\0asm\" magic): build it with GOOS=wasip1 GOARCH=wasm, or leave Command.Runner unset for a native binary")

// newRuntimeMu serialises wazero.NewCompilationCacheWithDir and
// wazero.NewRuntimeWithConfig: in wazero v1.12.0 both read, and set on
// first use, a package variable (its version string) without a lock, a
// data race between two Runtimes made at the same time (seen under -race
// in objectstore-matrix's TestMatrixWasm).
var newRuntimeMu sync.Mutex

// Prepare refuses a native binary: host.Start calls it only for a file
// that is not a WebAssembly module.
func (r *Runtime) Prepare(*host.Launch) error { return errNotWasm }

// init makes the wazero runtime, once.
func (r *Runtime) init() error {
	r.once.Do(func() {
		ctx := context.Background()
		limit := r.memoryLimit()
		rc := wazero.NewRuntimeConfig()
		if r.cfg.Interpret {
			rc = wazero.NewRuntimeConfigInterpreter()
		}
		// A compiled guest stops through the checks addStopChecks puts in
		// it (stop.go); wazero's own, at every loop, cost a call half its
		// time. The interpreter keeps wazero's: it checks without leaving
		// Go, and reads globals as plain Go values.
		rc = rc.WithCloseOnContextDone(r.cfg.Interpret).WithMemoryLimitPages(uint32(min(max(limit/pageSize, 1), 1<<16))) // 4 GiB at most: a limit above only lets tables grow
		if r.cfg.CacheDir != "" {
			newRuntimeMu.Lock()
			cache, err := wazero.NewCompilationCacheWithDir(r.cfg.CacheDir)
			newRuntimeMu.Unlock()
			if err != nil {
				r.initErr = fmt.Errorf("wasmhost: the compilation cache in %s (Config.CacheDir): %w", r.cfg.CacheDir, err)
				return
			}
			rc = rc.WithCompilationCache(cache)
			r.trimCache()
		}
		newRuntimeMu.Lock()
		r.rt = wazero.NewRuntimeWithConfig(ctx, rc)
		newRuntimeMu.Unlock()
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, r.rt); err != nil {
			r.initErr = fmt.Errorf("wasmhost: instantiating WASI: %w", err)
			return
		}
		r.snaps.limit = r.cfg.SnapshotBytes
		if r.snaps.limit == 0 {
			r.snaps.limit = DefaultSnapshotBytes
		}
		if r.snaps.limit > 0 {
			r.snaps.setter = newGlobalSetter(ctx, r.rt)
		}
	})
	return r.initErr
}

// Compile compiles module (kept for the next start of the same content);
// StartGuest does it when needed, and a manager's Describe does it ahead
// of the first start. A module built with -buildmode=c-shared is compiled
// twice: as it is, and without its data for the starts from its snapshot
// (docs/wasm.md); a start compiles the second in the background.
func (r *Runtime) Compile(ctx context.Context, module []byte) error {
	m, err := r.compile(ctx, module)
	if err == nil {
		r.waitDataless(ctx, m)
	}
	return err
}

func (r *Runtime) compile(ctx context.Context, module []byte) (wazero.CompiledModule, error) {
	if err := r.init(); err != nil {
		return nil, err
	}
	// A keyed hash finds a module fast (a 30 MB module's SHA-256 would
	// cost more than its start); the content is compared to be sure.
	key := maphash.Bytes(r.seed, module)
	if m := r.findCompiled(key, module); m != nil {
		return m, nil
	}
	// Not under r.mu: other guests start while a module compiles.
	m, shape, err := r.compileBounded(ctx, module)
	if err != nil {
		return nil, err
	}
	r.trimCache()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.compiled[key] {
		if bytes.Equal(c.module, module) { // compiled meanwhile
			m.Close(context.Background())
			return c.compiled, nil
		}
	}
	r.compiled[key] = append(r.compiled[key], compiledModule{module: module, compiled: m})
	r.shapes[m] = shape
	return m, nil
}

// CompileFile compiles the module in the file at path, as Compile does,
// and notes the file: a start of the same file, unpinned and unchanged
// since (the same file, size and modification time), neither reads it
// again nor compares its content.
func (r *Runtime) CompileFile(ctx context.Context, path string) error {
	m, err := r.compileFile(ctx, path)
	if err == nil {
		r.waitDataless(ctx, m)
	}
	return err
}

// compileFile is the compiled module in the file at path: the one
// compiled for it before when the file is unchanged, else read and
// compiled (or found by its content).
func (r *Runtime) compileFile(ctx context.Context, path string) (wazero.CompiledModule, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	fm, ok := r.files[path]
	r.mu.Unlock()
	if ok && unchanged(fm.info, fi) {
		return fm.compiled, nil
	}
	r.reads.Add(1)
	module := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, module); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if !hostwire.IsWasmModule(module) {
		return nil, errNotWasm
	}
	compiled, err := r.compile(ctx, module)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.files[path] = fileModule{info: fi, compiled: compiled}
	r.mu.Unlock()
	return compiled, nil
}

// unchanged reports whether b is the file a was, as it was: the same file
// (device and inode), size and modification time. A file rewritten in
// place with its time restored passes; a pin (Command.SHA256) does not
// rely on this.
func unchanged(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// fileModule is the compiled module of a file, and the file as it was.
type fileModule struct {
	info     os.FileInfo
	compiled wazero.CompiledModule
}

// closeWait bounds how long Close waits for the guests it stops.
const closeWait = 2 * time.Second

// errRuntimeClosed is why Close stops the guests still running.
var errRuntimeClosed = errors.New("wasmhost: the Runtime was closed")

// Close stops the guests still running (close their host.Clients first:
// a guest waiting for input ends when its Client closes its connection), waits
// for them within ctx (at most 2 s), and releases the compiled modules:
// at once, or, when a guest outlives the wait (one waiting in the
// operating system), once the last such guest has ended. Later starts
// fail.
func (r *Runtime) Close(ctx context.Context) error {
	r.close()
	if r.init() != nil || r.rt == nil {
		return nil
	}
	r.mu.Lock()
	r.closed = true
	guests := make([]*guest, 0, len(r.guests))
	for g := range r.guests {
		guests = append(guests, g)
	}
	r.mu.Unlock()
	for _, g := range guests {
		g.Stop(errRuntimeClosed)
	}
	// One deadline for all: a timer's channel fires once, so each guest
	// waited on after it would be waited on for ever.
	wait, cancel := context.WithTimeout(ctx, closeWait)
	defer cancel()
	var stayed []*guest
	for _, g := range guests {
		select {
		case <-g.done:
		case <-wait.Done():
			stayed = append(stayed, g)
		}
	}
	r.background.Wait() // a compile stops at its next function once closing is done
	r.snaps.drop()      // a guest that maps a snapshot's file holds it open until it ends
	if len(stayed) == 0 {
		return r.rt.Close(ctx)
	}
	// wazero's Close closes every module it holds, files and all: a guest
	// still in a host call (wazero stopped none: see stop.go) would use
	// them as they close.
	go func() {
		for _, g := range stayed {
			<-g.done
		}
		r.rt.Close(context.Background())
	}()
	return nil
}

// StartGuest starts the module spec holds in a goroutine of its own and
// returns at once.
func (r *Runtime) StartGuest(ctx context.Context, spec host.GuestSpec) (host.Guest, error) {
	compiled, err := r.guestModule(ctx, spec)
	if err != nil {
		return nil, err
	}
	// fsUses counts the guest's file system calls: a reactor's init that
	// makes one is not recorded (runReactor).
	fsUses := new(atomic.Int64)
	fsc, closeFS, err := r.fsConfig(fsUses)
	if err != nil {
		return nil, err
	}
	// The guest's connection to the host: a file of its own (mounted
	// last, so Dirs keep their descriptors), which plugin.Serve opens and
	// makes its descriptor 0, the one poll_oneoff waits on.
	conn := guestconn.New()
	g := &guest{done: make(chan struct{}), budget: r.cfg.CPUBudget, conn: conn}
	fsc = fsc.(sysfs.FSConfig).WithSysFSMount(newUsedFS(newConnFS(conn, &g.polls), fsUses), guestconn.Dir)
	oom := &oomWatch{w: spec.Stderr}
	runCtx, cancel := context.WithCancelCause(context.Background())
	g.cancel = cancel
	args := append([]string{filepath.Base(spec.Path)}, spec.Args...)
	mc := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(). // runStart (or runReactor) runs it once the stop global is armed
		WithArgs(args...).
		WithStdout(spec.Stdout).WithStderr(oom).
		WithSysWalltime().WithSysNanotime().WithNanosleep(sleepUntilDone(runCtx)).
		WithRandSource(rand.Reader).
		WithFSConfig(fsc)
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		mc = mc.WithEnv(k, v)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		closeFS()
		return nil, errRuntimeClosed
	}
	r.running.Add(1)
	r.guests[g] = struct{}{}
	r.mu.Unlock()
	go func() {
		defer close(g.done)
		defer closeFS()
		defer conn.Close()
		defer r.running.Add(-1)
		defer func() {
			r.mu.Lock()
			delete(r.guests, g)
			r.mu.Unlock()
		}()
		var reserved atomic.Bool
		ctx := r.withMemory(runCtx, compiled, g.done, &reserved)
		var mod api.Module
		var err error
		if isReactor(compiled) {
			mod, err = r.runReactor(ctx, compiled, mc, newSnapKey(compiled, args, spec.Env), fsUses.Load, reserved.Load, &g.stops)
		} else {
			mod, err = r.rt.InstantiateModule(ctx, compiled, mc)
			if err == nil && !r.cfg.Interpret {
				err = g.stops.arm(mod)
			}
			if err == nil {
				err = runStart(runCtx, mod)
			}
		}
		if mod != nil {
			mod.Close(context.Background())
		}
		g.err = r.exitErr(err, runCtx, oom)
	}()
	return g, nil
}

// sleepUntilDone is a guest's sleep (poll_oneoff with only a timer, as
// time.Sleep asks for), which ends early when ctx does: wazero's own
// sleep ignores the context, so a guest asleep would outlive Stop by the
// rest of its sleep.
func sleepUntilDone(ctx context.Context) sys.Nanosleep {
	return func(ns int64) {
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// guestModule is the compiled module spec names: its Module, or its
// Path's content when Module is nil (an unpinned start).
func (r *Runtime) guestModule(ctx context.Context, spec host.GuestSpec) (wazero.CompiledModule, error) {
	if spec.Module == nil {
		return r.compileFile(ctx, spec.Path)
	}
	if !hostwire.IsWasmModule(spec.Module) {
		return nil, errNotWasm
	}
	return r.compile(ctx, spec.Module)
}

// fsConfig grants Config.Dirs, each beneath its directory (grantFS);
// call closeFS when the guest has ended. uses, when not nil, counts the
// guest's calls to them (usedFS).
func (r *Runtime) fsConfig(uses *atomic.Int64) (fsc wazero.FSConfig, closeFS func(), err error) {
	fsc = wazero.NewFSConfig()
	var grants []*grantFS
	closeFS = func() {
		for _, g := range grants {
			g.close()
		}
	}
	for _, d := range r.cfg.Dirs {
		g, err := openGrant(d)
		if err != nil {
			closeFS()
			return nil, nil, fmt.Errorf("wasmhost: Config.Dirs: %s is not a directory (%v)", d.HostPath, err)
		}
		grants = append(grants, g)
		guestPath := d.GuestPath
		if guestPath == "" {
			guestPath = d.HostPath
		}
		var fs experimentalsys.FS = g
		if uses != nil {
			fs = newUsedFS(g, uses)
		}
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(fs, guestPath)
	}
	return fsc, closeFS, nil
}

// exitErr is how a guest ended: nil for exit status 0, what Stop was
// given when it was stopped, a *MemoryError when it ran out of memory.
func (r *Runtime) exitErr(err error, runCtx context.Context, oom *oomWatch) error {
	if cause := context.Cause(runCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 0 {
		return nil
	}
	if oom.seen() {
		return &MemoryError{Limit: r.memoryLimit()}
	}
	return err
}

// compiledModule is a module and its compiled form.
type compiledModule struct {
	module   []byte
	compiled wazero.CompiledModule
}

// guest is one running module.
type guest struct {
	done   chan struct{}
	err    error
	cancel context.CancelCauseFunc
	budget time.Duration
	conn   *guestconn.Pipe
	stops  stopSwitch
	polls  atomic.Int64 // the guest's waits for input (a test hook)
}

func (g *guest) Done() <-chan struct{} { return g.done }

func (g *guest) Err() error {
	select {
	case <-g.done:
		return g.err
	default:
		return nil
	}
}

func (g *guest) Stop(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	g.cancel(cause)
	g.stops.stop() // a guest computing traps at its next loop
	// A guest waiting in poll_oneoff is in the host's code, where the
	// cancelled context does not reach: closing its connection wakes it.
	g.conn.Close()
}

func (g *guest) Conn() net.Conn { return g.conn.Host() }

func (g *guest) CPUBudget() time.Duration { return g.budget }

// MemoryError reports a guest that ran out of its memory limit.
type MemoryError struct {
	// Limit is the limit it reached, in bytes.
	Limit int64
}

// Error says what happened and what to do.
func (e *MemoryError) Error() string {
	return fmt.Sprintf("the guest ran out of memory: its limit is %d MiB (wasmhost.Config.MemoryLimit); raise it if the plugin needs more", e.Limit>>20)
}

// oomWatch passes a guest's standard error on and notes the Go runtime's
// messages for memory it could not get (oomTexts).
type oomWatch struct {
	w    io.Writer
	mu   sync.Mutex
	hit  bool
	tail []byte
}

// oomTexts are the Go runtime's words for memory it cannot get: "out of
// memory" from the heap, "cannot allocate memory" from its own
// allocations (which one a guest hits depends on where it was).
var oomTexts = [][]byte{[]byte("out of memory"), []byte("runtime: cannot allocate memory")}

// oomTail is how much of a write oomWatch keeps, to find the words
// across two writes.
const oomTail = len("runtime: cannot allocate memory")

func (o *oomWatch) Write(p []byte) (int, error) {
	o.mu.Lock()
	buf := append(o.tail, p...)
	for _, text := range oomTexts {
		if bytes.Contains(buf, text) {
			o.hit = true
		}
	}
	o.tail = append(o.tail[:0], buf[max(0, len(buf)-oomTail):]...)
	o.mu.Unlock()
	return o.w.Write(p)
}

func (o *oomWatch) seen() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hit
}
