package manager

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/plugkit/plugkit/internal/hostwire"
	"github.com/plugkit/plugkit/internal/osdep"
)

// compiler is a guest runner that compiles a module ahead of its start
// (wasmhost.Runtime does).
type compiler interface {
	CompileFile(ctx context.Context, path string) error
}

// compileGuest compiles the WebAssembly module at path, if it is one
// (wasm) and the Finder's Guests compile ahead, so that its start, within
// DescribeTimeout, does not include the compile (a large module's takes
// seconds, unless the compilation cache has it).
func (f *Finder) compileGuest(ctx context.Context, path string, wasm bool) error {
	if c, ok := f.Guests.(compiler); ok && wasm {
		return c.CompileFile(ctx, path)
	}
	return nil
}

// runnable reports whether the plugin file at path is a WebAssembly
// module (read once here, and kept in the entry's Value for its describe
// and start), and says, in words a person can act on, why it cannot run:
// a native binary must be executable; a WebAssembly module need not be,
// but needs Guests; and a file named .wasm must be one. Telling a module
// by its first bytes (hostwire.IsWasm) costs no WebAssembly runtime.
func (f *Finder) runnable(path string, mode fs.FileMode) (wasm bool, err error) {
	if hostwire.IsWasm(path) {
		if f.Guests == nil {
			return true, fmt.Errorf("a WebAssembly module, and Finder.Guests is nil: give the Finder a runtime for it (wasmhost.New), or move it out of the plugin directory")
		}
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
