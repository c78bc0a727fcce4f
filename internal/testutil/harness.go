package testutil

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// NotOnWindowsPrefix starts the skip message of NotOnWindows, by which
// make test-windows (internal/tools/wintest) lists these tests with their
// reasons.
const NotOnWindowsPrefix = "does not apply to Windows: "

// NotOnWindows skips the test on Windows, giving reason (one line: what
// the test needs that Windows lacks, such as unix sockets or unix groups).
// Elsewhere it does nothing.
func NotOnWindows(t testing.TB, reason string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip(NotOnWindowsPrefix + reason)
	}
}

// TempDir is a directory of its own for the test, removed at its end,
// with a short path: t.TempDir names its directory after the test, and
// a unix socket that a plugin makes a few directories further down (a
// host's and a plugin's socket directories) could pass the 107 bytes a
// socket's path may have (interop's TestNoStaleGoPluginSockets did, under
// Main's directory). On Windows it is removed file by file: Wine lacks
// the POSIX-semantics delete that os.RemoveAll uses there.
func TempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "t")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() {
		if runtime.GOOS != "windows" {
			if err := os.RemoveAll(dir); err != nil {
				t.Errorf("TempDir cleanup: %v", err)
			}
			return
		}
		// A plugin that was just killed may hold a file for a moment.
		var err error
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if err = removeFileByFile(dir); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Errorf("TempDir cleanup: %v", err)
		}
	})
	return dir
}

// removeFileByFile removes dir and what it holds, deepest first, one
// os.Remove at a time.
func removeFileByFile(dir string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(paths) - 1; i >= 0; i-- {
		if err := os.Remove(paths[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// PrebuiltEnv names the directory of Windows binaries that make
// test-windows builds beforehand for GoBuild, since the Go tool does not
// run under Wine: each main package of the module as its import path with
// "/" replaced by "_", plus ".exe".
const PrebuiltEnv = "PLUGKIT_PREBUILT"

// GoBuild builds the main package pkg (an import path, or a path relative
// to the test's directory, testdata included) into the file out, as `go
// build -trimpath -o out pkg` without debug information, and returns the file's
// path: out, with ".exe" added on Windows when out has no extension,
// since Windows runs only files named so. The program is linked once
// into the Go build cache and copied from there (goLink), so the same
// plugin built by many tests costs one link. Under make
// test-windows, where the Go tool does not run, it copies the binary
// built beforehand instead.
func GoBuild(ctx context.Context, t testing.TB, out, pkg string) string {
	t.Helper()
	out, err := BuildBinary(ctx, out, pkg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// BuildBinary is GoBuild for callers without a testing.TB (a TestMain, a
// goroutine of its own): it returns the error instead.
func BuildBinary(ctx context.Context, out, pkg string) (string, error) {
	if runtime.GOOS == "windows" && filepath.Ext(out) == "" {
		out += ".exe"
	}
	if dir := os.Getenv(PrebuiltEnv); dir != "" {
		if err := copyPrebuilt(dir, out, pkg); err != nil {
			return "", fmt.Errorf("GoBuild %s: %w", pkg, err)
		}
		return out, nil
	}
	if err := goLink(ctx, nil, nil, out, pkg); err != nil {
		return "", err
	}
	return out, nil
}

// modulePath is the module's import path.
const modulePath = "github.com/plugkit/plugkit"

// copyPrebuilt copies pkg's binary from dir to out.
func copyPrebuilt(dir, out, pkg string) error {
	name, err := prebuiltName(pkg, ".exe")
	if err != nil {
		return err
	}
	if err := copyExecutable(filepath.Join(dir, name), out, 0o755); err != nil {
		return fmt.Errorf("%w (make test-windows builds every main package of the module beforehand)", err)
	}
	return nil
}

// prebuiltName is the file name make test-windows gives the build of
// the main package pkg (an import path, or a path starting with "."):
// its import path with "/" replaced by "_", plus ext.
func prebuiltName(pkg, ext string) (string, error) {
	importPath := pkg
	if strings.HasPrefix(pkg, ".") {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			return "", err
		}
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			return "", err
		}
		importPath = modulePath + "/" + filepath.ToSlash(rel)
	}
	return strings.ReplaceAll(importPath, "/", "_") + ext, nil
}

// moduleRoot finds the directory of go.mod from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
