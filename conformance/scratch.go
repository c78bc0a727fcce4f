package conformance

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
)

// GuestScratch is where the WebAssembly plugins of a Matrix see its
// Scratch directory: grant Scratch to Matrix.Guests there, writable
// (wasmhost.Dir{HostPath: scratch, GuestPath: conformance.GuestScratch,
// Writable: true}). A guest names files with "/"-separated paths, so a
// fixed path serves on every host, Windows too.
const GuestScratch = "/scratch"

// scratchKey is the context key of the plugin under test's scratch: the
// Matrix sets it per binary.
type scratchKey struct{}

// scratch says where the suites of one binary make their directories:
// hostDir on the host (empty: os.TempDir()), named pluginDir for the
// plugin; err, when set, is why they cannot (a module without a grant).
type scratch struct {
	hostDir, pluginDir string
	err                error
}

// withScratch gives the suites run under ctx the scratch of bin: modules
// see mx.Scratch at GuestScratch, binaries as it is.
func (mx Matrix) withScratch(ctx context.Context, bin string, module bool) context.Context {
	s := scratch{hostDir: mx.Scratch, pluginDir: mx.Scratch}
	if module {
		s.pluginDir = GuestScratch
		if mx.Scratch == "" {
			s.err = fmt.Errorf("%s is a WebAssembly module, which sees only the directories its runtime grants it, and Matrix.Scratch is empty: set it to a directory, and grant that to Matrix.Guests, writable, at conformance.GuestScratch (wasmhost.Dir{HostPath: scratch, GuestPath: %q, Writable: true})", filepath.Base(bin), GuestScratch)
		}
	}
	return context.WithValue(ctx, scratchKey{}, s)
}

// TempDir makes a new, empty directory for a suite to hand the plugin
// under test (an object store's directory, say), and returns its path as
// the plugin names it and a cleanup that removes it. Suites make the
// files and directories they give a plugin with it rather than with
// os.MkdirTemp: in a Matrix, a WebAssembly plugin can reach only what its
// runtime grants it, and TempDir makes the directory in Matrix.Scratch,
// which the Matrix's caller grants it at GuestScratch. Outside a Matrix
// (Suite.Test, or Suite.Run on a client of one's own) it is made in
// os.TempDir(). pattern names it as os.MkdirTemp's does. For a
// WebAssembly plugin of a Matrix without Scratch it fails, saying what to
// set.
func TempDir(ctx context.Context, pattern string) (dir string, cleanup func(), err error) {
	s, _ := ctx.Value(scratchKey{}).(scratch)
	if s.err != nil {
		return "", nil, s.err
	}
	hostDir, err := os.MkdirTemp(s.hostDir, pattern)
	if err != nil {
		return "", nil, fmt.Errorf("conformance: making a directory for the plugin: %w", err)
	}
	// The plugin may have made files and symbolic links in it: RemoveAll
	// removes links, never what they point to.
	cleanup = func() { os.RemoveAll(hostDir) }
	if s.pluginDir == s.hostDir {
		return hostDir, cleanup, nil
	}
	return path.Join(s.pluginDir, filepath.Base(hostDir)), cleanup, nil
}
