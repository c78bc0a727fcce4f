package wasmhost

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// A guest's linear memory (issue 36, point 9): wazero's own grows a Go
// slice by copying it, so a guest at 512 MiB had cost the host 1.5-1.8 GB
// (the old copies wait for the collector, which lets the heap double).
// guestMemory reserves the most the guest may reach once, outside Go's
// heap where the system allows (reserveMemory: an anonymous mapping whose
// pages become resident only when the guest writes them), and grows in
// place: the host holds at most what the guest touched. Its limit is
// Config.MemoryLimit less what the module's tables may take, so that
// tables and memory together stay within MemoryLimit.

// memoryAllocator makes guestMemory of at most limit bytes, for the
// guest whose goroutine closes done when it ends.
type memoryAllocator struct {
	limit    uint64
	done     <-chan struct{}
	reserved *atomic.Bool // set when the memory is reserveMemory's mapping; may be nil
}

// Allocate reserves min(maximum, limit) bytes (wazero asks for the
// initial capacity, ignored here, and the memory's maximum).
func (a memoryAllocator) Allocate(_, maximum uint64) experimental.LinearMemory {
	size := min(maximum, a.limit)
	m := &guestMemory{limit: size}
	buf, free := reserveMemory(size)
	m.buf = buf
	if free != nil && a.reserved != nil {
		a.reserved.Store(true)
	}
	if free != nil {
		// wazero frees a module's memory when the module is closed, which
		// Runtime.Close does while a guest may still run (waiting in a
		// host call, say): unmapped then, its next access would crash the
		// host. The mapping goes once the guest's goroutine has ended.
		m.free = func() {
			select {
			case <-a.done:
				free()
			default:
				go func() { <-a.done; free() }()
			}
		}
	}
	return m
}

// guestMemory is one guest's linear memory: buf, reserved up to limit.
type guestMemory struct {
	buf   []byte // len 0, capacity limit when reserved; else grown by copy
	limit uint64
	free  func() // releases buf's reservation; nil for a Go slice
}

// Reallocate returns the memory at size bytes, nil past its limit (the
// guest's memory.grow fails, and a Go guest ends "out of memory").
func (m *guestMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		return nil
	}
	if size > uint64(cap(m.buf)) { // not reserved: grow by copy
		grown := make([]byte, size, min(max(size, 2*uint64(cap(m.buf))), m.limit))
		copy(grown, m.buf)
		m.buf = grown
	}
	m.buf = m.buf[:size]
	return m.buf
}

// Free releases the memory.
func (m *guestMemory) Free() {
	if m.free != nil {
		m.free()
		m.free = nil
	}
	m.buf = nil
}

// DefaultCompileTimeout bounds a module's compile when
// Config.CompileTimeout is 0: a Go module of 30 MB compiles in 5-6 s on a
// 2-CPU machine.
const DefaultCompileTimeout = time.Minute

// memoryLimit is Config.MemoryLimit, or its default.
func (r *Runtime) memoryLimit() int64 {
	if r.cfg.MemoryLimit <= 0 {
		return DefaultMemoryLimit
	}
	return r.cfg.MemoryLimit
}

// findCompiled is module compiled before (key is its hash), or nil.
func (r *Runtime) findCompiled(key uint64, module []byte) wazero.CompiledModule {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.compiled[key] {
		if bytes.Equal(c.module, module) {
			return c.compiled
		}
	}
	return nil
}

// compileWorkers is how many goroutines compile a module: wazero checks
// its context between functions only when more than one does.
const compileWorkers = 2

// compileBounded checks module against the limits, adds its stop checks
// (addStopChecks), then compiles it within ctx and Config.CompileTimeout: at the deadline it returns, and
// the compile stops at its next function (one function's compile is
// bounded by Limits.FunctionSize and Limits.Blocks).
func (r *Runtime) compileBounded(ctx context.Context, module []byte) (wazero.CompiledModule, moduleShape, error) {
	shape, err := validate(module, r.cfg.Limits.withDefaults(), r.memoryLimit()/pageSize*pageSize)
	if err != nil {
		return nil, shape, err
	}
	module, err = r.withStopChecks(module, shape.code)
	shape.code = codeShape{}
	if err != nil {
		return nil, shape, err
	}
	timeout := r.cfg.CompileTimeout
	if timeout <= 0 {
		timeout = DefaultCompileTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errCompileTimeout{timeout})
	defer cancel()
	// Close waits for every compile, one abandoned at its timeout
	// included, before it releases wazero's store: a compile that went on
	// writing to a released store panicked, and took the host's process
	// down (TestCloseWaitsForAbandonedCompile). Closing ends the compile
	// at its next function.
	r.mu.Lock()
	if r.closing.Err() != nil {
		r.mu.Unlock()
		return nil, shape, errRuntimeClosed
	}
	r.background.Add(1)
	r.mu.Unlock()
	stopOnClose := context.AfterFunc(r.closing, cancel)
	defer stopOnClose()
	type result struct {
		m   wazero.CompiledModule
		err error
	}
	done := make(chan result, 1)
	var (
		mu        sync.Mutex
		abandoned bool // the caller returned: the compile releases what it made
	)
	r.compiling.Add(1)
	go func() {
		defer r.background.Done()
		defer r.compiling.Add(-1)
		m, err := r.rt.CompileModule(experimental.WithCompilationWorkers(ctx, compileWorkers), module)
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			if m != nil {
				m.Close(context.Background())
			}
			return
		}
		done <- result{m, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			if cause := context.Cause(ctx); cause != nil {
				return nil, shape, fmt.Errorf("wasmhost: compiling the module: %w", cause)
			}
			return nil, shape, fmt.Errorf("wasmhost: compiling the module: %w; is it a wasip1 module (GOOS=wasip1 GOARCH=wasm)?", res.err)
		}
		return res.m, shape, nil
	case <-ctx.Done():
		mu.Lock()
		select {
		case res := <-done: // it ended meanwhile, past the deadline
			if res.m != nil {
				res.m.Close(context.Background())
			}
		default:
			abandoned = true
		}
		mu.Unlock()
		return nil, shape, fmt.Errorf("wasmhost: compiling the module: %w", context.Cause(ctx))
	}
}

// errCompileTimeout is a compile past Config.CompileTimeout.
type errCompileTimeout struct{ timeout time.Duration }

func (e errCompileTimeout) Error() string {
	return fmt.Sprintf("it took longer than %v (wasmhost.Config.CompileTimeout): raise it for a module you trust, or set Config.CacheDir so that it is compiled once", e.timeout)
}

// withMemory is ctx with the allocator of the memory of the guest whose
// goroutine closes done: at most MemoryLimit less what the module's
// tables may take.
func (r *Runtime) withMemory(ctx context.Context, compiled wazero.CompiledModule, done <-chan struct{}, reserved *atomic.Bool) context.Context {
	r.mu.Lock()
	tables := r.shapes[compiled].tableBytes
	r.mu.Unlock()
	limit := uint64(r.memoryLimit() / pageSize * pageSize)
	return experimental.WithMemoryAllocator(ctx, memoryAllocator{limit: limit - min(tables, limit), done: done, reserved: reserved})
}
