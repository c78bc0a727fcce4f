package manager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/hostwire"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/wasmhost"
)

// wasmGuests is a Manager's runtime of WebAssembly plugins, made at the
// first one's start.
type wasmGuests struct {
	once sync.Once
	rt   *wasmhost.Runtime
}

// runtime returns the runtime, made with cfg (its compiled modules kept
// beside the cache file, unless cfg says where).
func (w *wasmGuests) runtime(cfg Config) *wasmhost.Runtime {
	w.once.Do(func() {
		wc := cfg.Wasm
		if wc.CacheDir == "" && cfg.CacheFile != "" {
			wc.CacheDir = cfg.CacheFile + ".wasm"
		}
		w.rt = wasmhost.New(wc)
	})
	return w.rt
}

// close ends the runtime's guests, if it was made.
func (w *wasmGuests) close() {
	w.once.Do(func() {}) // none is made after Close
	if w.rt != nil {
		w.rt.Close(context.Background())
	}
}

// forWasm makes cmd run its Path inside this process when it is a
// WebAssembly module (wasm, as runnable found).
func (m *Manager) forWasm(cmd *host.Command, wasm bool) {
	if !wasm {
		return
	}
	if m.cfg.Guests != nil {
		cmd.Runner = m.cfg.Guests
		return
	}
	if rt := m.wasm.runtime(m.cfg); rt != nil { // nil after Close
		cmd.Runner = rt
	}
}

// compileWasm compiles the WebAssembly module at path, if it is one
// (wasm), so that its start, within DescribeTimeout, does not include the
// compile (a large module's takes seconds, unless the compilation cache
// has it).
func (m *Manager) compileWasm(ctx context.Context, path string, wasm bool) error {
	if !wasm {
		return nil
	}
	if m.cfg.Guests != nil {
		if c, ok := m.cfg.Guests.(interface {
			CompileFile(ctx context.Context, path string) error
		}); ok {
			return c.CompileFile(ctx, path)
		}
		return nil
	}
	rt := m.wasm.runtime(m.cfg)
	if rt == nil {
		return errors.New("the manager is closed")
	}
	return rt.CompileFile(ctx, path)
}

// runnable reports whether the plugin file at path is a WebAssembly
// module (read once here, and passed on to compileWasm, startDescribe and
// start through Binary), and says, in words a person can act on, why it
// cannot run: a native binary must be executable; a WebAssembly module
// need not be, and a file named .wasm must be one.
func runnable(path string, mode fs.FileMode) (wasm bool, err error) {
	if hostwire.IsWasm(path) {
		return true, nil
	}
	if strings.EqualFold(filepath.Ext(path), ".wasm") {
		return false, fmt.Errorf("named .wasm but not a WebAssembly module (it does not start with \"\\0asm\"): build it with GOOS=wasip1 GOARCH=wasm go build, or move it out of the plugin directory")
	}
	if !osdep.Executable(mode) {
		return false, fmt.Errorf("not executable (mode %v): chmod +x it, or move it out of the plugin directory", mode.Perm())
	}
	return false, nil
}
