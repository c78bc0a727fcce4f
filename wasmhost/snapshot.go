package wasmhost

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// A guest built with -buildmode=c-shared (a WASI reactor) initialises in
// its export _initialize (the Go runtime, then every package's init) and
// returns to the host, its WebAssembly stack empty: the whole of its state
// is then its linear memory and its globals (Go's wasm port keeps its
// goroutine stacks in linear memory and its registers SP, g, ... in
// globals). The host records both once (the technique Wizer made known)
// and starts later guests of the same module, arguments and environment
// from the record: it instantiates the module without running
// _initialize, writes the recorded memory and globals, and calls
// plugkit_main (plugin's export, which runs the program's main).
//
// A snapshot lives in the Runtime's memory only, beside the module's
// compiled form, and goes with it; it is keyed by the compiled module
// (found by its content), the arguments and the environment, so a guest
// never starts from another module's record, nor from one made with
// another environment (Go reads its environment during its init).

// Export names of a snapshot-ready guest.
const (
	exportInitialize = "_initialize"
	exportMain       = "plugkit_main"
)

// DefaultSnapshotBytes is Config.SnapshotBytes when it is 0: 64 MiB,
// some six snapshots of a gRPC guest (9.3 MiB after its init).
const DefaultSnapshotBytes = 64 << 20

// snapPage is the unit in which a snapshot skips zero memory.
const snapPage = 4 << 10

// snapshot is a guest's state after its init.
type snapshot struct {
	size    uint32     // memory size in bytes
	pages   []snapPart // its non-zero parts, in order
	globals []uint64
	bytes   int64    // what the snapshot holds
	file    *os.File // the memory in a sealed file (Linux), or nil
	// users are the restores reading it (snapshots.mu); a snapshot
	// dropped meanwhile closes its file after the last.
	users   int
	dropped bool
}

// snapPart is one run of non-zero pages of a snapshot's memory: n bytes
// at off, in data, or in the snapshot's file when data is nil.
type snapPart struct {
	off, n uint32
	data   []byte
}

// snapKey finds a snapshot: the compiled module, the guest's arguments
// and its environment.
type snapKey struct {
	module  wazero.CompiledModule
	argsEnv string
}

// newSnapKey is the key of m started with args and env: each string
// after its length, so that no two lists make the same key.
func newSnapKey(m wazero.CompiledModule, args, env []string) snapKey {
	var b []byte
	for _, list := range [][]string{args, env} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, s := range list {
			b = append(binary.AppendUvarint(b, uint64(len(s))), s...)
		}
	}
	return snapKey{module: m, argsEnv: string(b)}
}

// snapshots are a Runtime's snapshots, within a total size.
type snapshots struct {
	mu     sync.Mutex
	limit  int64
	bytes  int64
	byKey  map[snapKey]*snapshot
	order  []snapKey     // oldest first
	setter *globalSetter // nil: globals cannot be written, no snapshots
	mapped atomic.Int32  // restores that mapped the snapshot (a test hook)
}

// get returns the snapshot for key, nil when there is none; release it
// once restored.
func (s *snapshots) get(key snapKey) *snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := s.byKey[key]
	if snap != nil {
		snap.users++
	}
	return snap
}

// release ends a restore's use of snap.
func (s *snapshots) release(snap *snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap.users--
	if snap.dropped {
		s.closeFile(snap)
	}
}

// closeFile closes snap's file, dropped, once no restore reads it (a
// guest that maps it holds it open until it ends); s.mu is held.
func (s *snapshots) closeFile(snap *snapshot) {
	snap.dropped = true
	if snap.users == 0 && snap.file != nil {
		snap.file.Close()
		snap.file = nil
	}
}

// put keeps snap for key, dropping the oldest ones past the limit; a
// snapshot larger than the limit is not kept.
func (s *snapshots) put(key snapKey, snap *snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if snap.bytes > s.limit || s.byKey[key] != nil {
		s.closeFile(snap)
		return
	}
	for s.bytes+snap.bytes > s.limit && len(s.order) > 0 {
		old := s.order[0]
		s.order = s.order[1:]
		s.bytes -= s.byKey[old].bytes
		s.closeFile(s.byKey[old])
		delete(s.byKey, old)
	}
	if s.byKey == nil {
		s.byKey = make(map[snapKey]*snapshot)
	}
	s.byKey[key] = snap
	s.order = append(s.order, key)
	s.bytes += snap.bytes
}

// drop forgets every snapshot and closes their files once no restore
// reads them.
func (s *snapshots) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, snap := range s.byKey {
		s.closeFile(snap)
	}
	s.byKey, s.order, s.bytes = nil, nil, 0
}

// isReactor reports whether m is a WASI reactor (built with
// -buildmode=c-shared): it exports _initialize, and no _start.
func isReactor(m wazero.CompiledModule) bool {
	fns := m.ExportedFunctions()
	_, init := fns[exportInitialize]
	_, start := fns["_start"]
	return init && !start
}

// errNoMain reports a reactor module without plugin's entry point.
var errNoMain = errors.New("wasmhost: the module is a WASI reactor (built with -buildmode=c-shared) without a plugkit_main export: build a plugin that calls plugin.Serve (or catalog.Serve), with plugkit's plugin package of this release or later")

// takeSnapshot records mod's memory and globals; false when they take
// more than limit bytes (it stops copying there). stops says whether mod
// has the stop checks' globals (stop.go).
func takeSnapshot(mod api.Module, limit int64, stops bool) (*snapshot, bool) {
	im, ok := mod.(experimental.InternalModule)
	if !ok || mod.Memory() == nil {
		return nil, false
	}
	mem, ok := mod.Memory().Read(0, mod.Memory().Size())
	if !ok {
		return nil, false
	}
	snap := &snapshot{size: uint32(len(mem)), globals: make([]uint64, im.NumGlobal())}
	for i := range snap.globals {
		if t := im.Global(i).Type(); t != api.ValueTypeI32 && t != api.ValueTypeI64 && t != api.ValueTypeF32 && t != api.ValueTypeF64 {
			return nil, false // a vector (Get gives 64 bits of it) or a reference
		}
		snap.globals[i] = im.Global(i).Get()
	}
	zero := make([]byte, snapPage)
	for off := 0; off < len(mem); {
		if bytes.Equal(mem[off:min(off+snapPage, len(mem))], zero[:min(snapPage, len(mem)-off)]) {
			off += snapPage
			continue
		}
		end := off + snapPage
		for end < len(mem) && !bytes.Equal(mem[end:min(end+snapPage, len(mem))], zero[:min(snapPage, len(mem)-end)]) {
			end += snapPage
		}
		end = min(end, len(mem))
		if snap.bytes += int64(end - off); snap.bytes > limit {
			return nil, false
		}
		snap.pages = append(snap.pages, snapPart{off: uint32(off), n: uint32(end - off), data: bytes.Clone(mem[off:end])})
		off = end
	}
	// The last two globals are $tick and $stop (stop.go), which start
	// each guest as they start a module: $stop at 0 whatever it was when
	// the snapshot was taken (armed afterwards, it takes a Stop then).
	if n := len(snap.globals); stops && n >= 2 {
		snap.globals[n-2], snap.globals[n-1] = tickPeriod, 0
	}
	snap.bytes += int64(8 * len(snap.globals))
	return snap, snap.bytes <= limit
}

// restore writes snap into mod, freshly instantiated without its
// _initialize: its memory grown to the snapshot's size, the memory its
// data segments wrote cleared (unless clean: all zero, as a data-less
// module's), the snapshot's parts and globals written.
//
// With reserved (the guest's memory is reserveMemory's mapping, which
// restore may map over), clean and the snapshot in a file, restore maps
// the file over the memory, copy-on-write, instead of copying it.
func (s *snapshots) restore(mod api.Module, snap *snapshot, clean, reserved bool) error {
	im, ok := mod.(experimental.InternalModule)
	mem := mod.Memory()
	if !ok || mem == nil || im.NumGlobal() != len(snap.globals) || mem.Size() > snap.size {
		return errSnapshotMismatch
	}
	initial := mem.Size() // where the data segments are
	if _, ok := mem.Grow((snap.size - initial) / pageSize); !ok || mem.Size() != snap.size {
		return errSnapshotMismatch
	}
	// Clear what the data segments wrote, up to the initial size, except
	// where the snapshot writes anyway.
	if clean && reserved && snap.file != nil {
		if all, ok := mem.Read(0, snap.size); ok && mapSnapshot(snap.file, all) {
			s.mapped.Add(1)
			return s.setGlobals(mod, im, snap)
		}
	}
	buf, _ := mem.Read(0, initial)
	if clean {
		buf = nil
	}
	at := uint32(0)
	for _, p := range snap.pages {
		if end := min(p.off, uint32(len(buf))); at < end {
			clear(buf[at:end])
		}
		at = p.off + p.n
	}
	if at < uint32(len(buf)) {
		clear(buf[at:])
	}
	for _, p := range snap.pages {
		if p.data != nil {
			mem.Write(p.off, p.data)
			continue
		}
		if part, ok := mem.Read(p.off, p.n); !ok || readFull(snap.file, part, int64(p.off)) != nil {
			return errSnapshotMismatch
		}
	}
	return s.setGlobals(mod, im, snap)
}

// setGlobals writes snap's globals into mod.
func (s *snapshots) setGlobals(_ api.Module, im experimental.InternalModule, snap *snapshot) error {
	for i, v := range snap.globals {
		if im.Global(i).Get() != v && !s.setter.set(im.Global(i), v) {
			return errSnapshotMismatch
		}
	}
	return nil
}

// readFull reads len(b) bytes of f at off.
func readFull(f *os.File, b []byte, off int64) error {
	_, err := f.ReadAt(b, off)
	return err
}

// errSnapshotMismatch reports a snapshot that does not fit the module it
// is written into: not reached, as a snapshot is found by its module.
var errSnapshotMismatch = errors.New("wasmhost: a guest's snapshot does not fit its module")

// globalSetter writes any global of a module, exported or not, mutable
// or not. wazero v1.12.0 reads every global (experimental.InternalModule)
// but writes exported mutable ones only (api.MutableGlobal); a Go module
// exports none. Its read-only view and its writable one (the types
// behind InternalModule.Global and an exported mutable global) hold the
// same one pointer to the global: the setter keeps the type of a
// writable view, taken from a module of its own, and gives it the pointer
// of the view to write. set checks the value reads back, so a later
// wazero where this no longer holds turns snapshots off rather than
// corrupting a guest (TestSnapshotGlobalSetter).
type globalSetter struct {
	writable api.MutableGlobal
}

// setterModule is (module (global (export "g") (mut i64) (i64.const 0))).
var setterModule = []byte{0, 'a', 's', 'm', 1, 0, 0, 0, 6, 6, 1, 0x7e, 1, 0x42, 0, 0x0b, 7, 5, 1, 1, 'g', 3, 0}

// newGlobalSetter instantiates setterModule in rt; nil when wazero's
// views are not what globalSetter needs.
func newGlobalSetter(ctx context.Context, rt wazero.Runtime) *globalSetter {
	mod, err := rt.InstantiateWithConfig(ctx, setterModule, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		return nil
	}
	w, ok := mod.ExportedGlobal("g").(api.MutableGlobal)
	if !ok || unsafe.Sizeof(w) != unsafe.Sizeof(ifaceWords{}) {
		return nil
	}
	s := &globalSetter{writable: w}
	// Its own global, through its read-only view, proves the layout.
	if im, ok := mod.(experimental.InternalModule); !ok || im.NumGlobal() != 1 || !s.set(im.Global(0), 0x5eed) || w.Get() != 0x5eed {
		return nil
	}
	return s
}

// ifaceWords is an interface value's two words.
type ifaceWords struct{ typ, data unsafe.Pointer }

// set writes v to the global g views, and reports whether it reads back.
func (s *globalSetter) set(g api.Global, v uint64) bool {
	if s == nil || g == nil {
		return false
	}
	w := s.writable
	(*ifaceWords)(unsafe.Pointer(&w)).data = (*ifaceWords)(unsafe.Pointer(&g)).data
	w.Set(v)
	return g.Get() == v
}

// runReactor runs a snapshot-ready guest: from its snapshot for key when
// there is one, else through its _initialize, after which its snapshot is
// taken unless the init called the file system (fsUses counts the
// guest's calls): a file the init opened is a descriptor of that guest's
// own, which a guest started from its memory would not have, and what the
// init read or found there may differ at the next start. It returns when
// the guest ends.
//
// reserved reports whether the guest's memory is reserveMemory's mapping.
func (r *Runtime) runReactor(ctx context.Context, compiled wazero.CompiledModule, mc wazero.ModuleConfig, key snapKey, fsUses func() int64, reserved func() bool, stops *stopSwitch) (api.Module, error) {
	if _, ok := compiled.ExportedFunctions()[exportMain]; !ok {
		return nil, errNoMain
	}
	snap := r.snaps.get(key)
	module, clean := compiled, false
	if snap != nil {
		if m := r.dataless(compiled); m != nil {
			module, clean = m, true
			r.cleanRestores.Add(1)
		}
	}
	mod, err := r.rt.InstantiateModule(ctx, module, mc.WithStartFunctions())
	if err != nil {
		if snap != nil {
			r.snaps.release(snap)
		}
		return mod, err
	}
	// The snapshot first, then the stop global armed: a Stop that came
	// meanwhile sets it once armed, and no snapshot overwrites it.
	if snap != nil {
		err := r.snaps.restore(mod, snap, clean, reserved())
		r.snaps.release(snap)
		if err != nil {
			return mod, err
		}
		r.restores.Add(1)
	}
	if !r.cfg.Interpret {
		if err := stops.arm(mod); err != nil {
			return mod, err
		}
	}
	if snap == nil {
		uses := fsUses()
		if _, err := mod.ExportedFunction(exportInitialize).Call(ctx); err != nil {
			return mod, err
		}
		if r.snaps.setter != nil && fsUses() == uses && ctx.Err() == nil {
			if snap, ok := takeSnapshot(mod, r.snaps.limit, !r.cfg.Interpret); ok {
				if snap.file = snapshotFile(snap); snap.file != nil {
					for i := range snap.pages {
						snap.pages[i].data = nil // kept in the file only
					}
				}
				r.snaps.put(key, snap)
			}
		}
	}
	_, err = mod.ExportedFunction(exportMain).Call(ctx)
	return mod, err
}

// usedFS is a file system that counts the calls a guest makes to it in
// uses, except the first opening of its directory itself: wazero's own,
// at the first use of the directory's descriptor (Go's runtime makes one
// in its init), kept inside wazero and never a descriptor of the guest's.
// Any later one is the guest's (os.Open of the directory).
type usedFS struct {
	experimentalsys.FS
	uses *atomic.Int64
	dot  atomic.Bool // the directory itself was opened
}

func newUsedFS(fs experimentalsys.FS, uses *atomic.Int64) *usedFS {
	return &usedFS{FS: fs, uses: uses}
}

func (u *usedFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if (p != "." && p != "") || !u.dot.CompareAndSwap(false, true) {
		u.uses.Add(1)
	}
	return u.FS.OpenFile(p, flag, perm)
}

func (u *usedFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	u.uses.Add(1)
	return u.FS.Lstat(p)
}

func (u *usedFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	u.uses.Add(1)
	return u.FS.Stat(p)
}

func (u *usedFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	u.uses.Add(1)
	return u.FS.Mkdir(p, perm)
}

func (u *usedFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	u.uses.Add(1)
	return u.FS.Chmod(p, perm)
}

func (u *usedFS) Rename(from, to string) experimentalsys.Errno {
	u.uses.Add(1)
	return u.FS.Rename(from, to)
}

func (u *usedFS) Rmdir(p string) experimentalsys.Errno {
	u.uses.Add(1)
	return u.FS.Rmdir(p)
}

func (u *usedFS) Unlink(p string) experimentalsys.Errno {
	u.uses.Add(1)
	return u.FS.Unlink(p)
}

func (u *usedFS) Link(oldPath, newPath string) experimentalsys.Errno {
	u.uses.Add(1)
	return u.FS.Link(oldPath, newPath)
}

func (u *usedFS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	u.uses.Add(1)
	return u.FS.Symlink(oldPath, linkName)
}

func (u *usedFS) Readlink(p string) (string, experimentalsys.Errno) {
	u.uses.Add(1)
	return u.FS.Readlink(p)
}

func (u *usedFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	u.uses.Add(1)
	return u.FS.Utimens(p, atim, mtim)
}

// A guest started from a snapshot needs none of its module's data
// segments, which wazero copies into every new memory (7.7 MB for a gRPC
// plugin, most of an instantiation's time): the Runtime compiles, once,
// in the background, the same module with every data segment emptied,
// and starts guests from the snapshot with it once it is ready.

// variant is a reactor's data-less form, being compiled or compiled.
type variant struct {
	ready    chan struct{} // closed when compiled is set, or the compile failed
	compiled wazero.CompiledModule
}

// withoutData is module without the content of its data segments; false
// when it has none or cannot be read. A module without a data count
// section (Go's) loses its segments: its code cannot name one (memory.init
// and data.drop need that section; wazero refuses them without it), and
// wazero walks and indexes every segment at each instantiation (Go's
// linker writes up to 100,000: a 2.4 MB table built and walked per
// start). With the section, each segment is made passive and empty
// instead, so that the count and indices hold.
func withoutData(module []byte) ([]byte, bool) {
	if len(module) < 8 {
		return nil, false
	}
	out := append([]byte(nil), module[:8]...)
	r := reader{b: module, pos: 8}
	found, counted := false, false
	for !r.done() {
		start, id, body := r.section()
		if r.err != nil {
			return nil, false
		}
		counted = counted || id == 12 // the data count section, before the code
		if id != 11 {                 // not the data section
			out = append(out, module[start:r.pos]...)
			continue
		}
		found = true
		if !counted {
			out = append(out, 11, 1, 0) // no segments
			continue
		}
		sr := reader{b: body}
		n := sr.u32()
		sec := binary.AppendUvarint(nil, uint64(n))
		for range n {
			if !sr.dataSegmentHead() {
				return nil, false
			}
			sr.bytes(int(sr.u32()))
			if sr.err != nil {
				return nil, false
			}
			// Passive and empty: instantiation neither evaluates its
			// offset nor copies anything.
			sec = append(sec, 1, 0)
		}
		if !sr.done() || sr.err != nil {
			return nil, false
		}
		out = append(binary.AppendUvarint(append(out, 11), uint64(len(sec))), sec...)
	}
	return out, found
}

// dataSegmentHead reads a data segment up to its content: its kind, and
// an active one's memory and offset; false for a kind it does not know.
func (r *reader) dataSegmentHead() bool {
	switch r.u32() { // the segment's kind
	case 0: // active, memory 0
		r.constExpr()
	case 1: // passive
	case 2: // active, memory named
		r.u32()
		r.constExpr()
	default:
		return false
	}
	return true
}

// dataless is the data-less form of the reactor compiled, nil until it
// is compiled; the first call starts its compile, in the background.
func (r *Runtime) dataless(compiled wazero.CompiledModule) wazero.CompiledModule {
	r.mu.Lock()
	v, ok := r.variants[compiled]
	if !ok && r.closing.Err() == nil { // Close waits for what started before it
		v = &variant{ready: make(chan struct{})}
		r.variants[compiled] = v
		module := r.moduleOf(compiled)
		r.background.Add(1)
		go func() {
			defer r.background.Done()
			defer close(v.ready)
			stripped, ok := withoutData(module)
			if !ok {
				return
			}
			shape, err := validate(stripped, r.cfg.Limits.withDefaults(), r.memoryLimit()/pageSize*pageSize)
			if err != nil {
				return
			}
			if stripped, err = r.withStopChecks(stripped, shape.code); err != nil {
				return
			}
			timeout := r.cfg.CompileTimeout
			if timeout <= 0 {
				timeout = DefaultCompileTimeout
			}
			// The compile stops between functions when Close cancels
			// closing, and it ends before Close closes wazero's runtime.
			ctx, cancel := context.WithTimeout(r.closing, timeout)
			defer cancel()
			m, err := r.rt.CompileModule(experimental.WithCompilationWorkers(ctx, compileWorkers), stripped)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.shapes[m] = r.shapes[compiled]
			r.mu.Unlock()
			v.compiled = m
		}()
	}
	r.mu.Unlock()
	if v == nil {
		return nil
	}
	select {
	case <-v.ready:
		return v.compiled
	default:
		return nil
	}
}

// waitDataless compiles the data-less form of m, a reactor, and waits
// for it within ctx; for another module it does nothing.
func (r *Runtime) waitDataless(ctx context.Context, m wazero.CompiledModule) {
	if !isReactor(m) || r.snaps.setter == nil {
		return
	}
	r.dataless(m)
	r.mu.Lock()
	v := r.variants[m]
	r.mu.Unlock()
	if v != nil {
		select {
		case <-v.ready:
		case <-ctx.Done():
		}
	}
}

// moduleOf is the content of the module compiled; r.mu is held.
func (r *Runtime) moduleOf(compiled wazero.CompiledModule) []byte {
	for _, cs := range r.compiled {
		for _, c := range cs {
			if c.compiled == compiled {
				return c.module
			}
		}
	}
	return nil
}
