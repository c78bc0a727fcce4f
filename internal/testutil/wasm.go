package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// GoBuildWasm builds the main package pkg for GOOS=wasip1 GOARCH=wasm into
// the file out (a WebAssembly module) and returns out. Under make
// test-windows, where the Go tool does not run, it copies the module
// built beforehand (PrebuiltEnv: the import path with "/" replaced by
// "_", plus ".wasm").
func GoBuildWasm(ctx context.Context, t testing.TB, out, pkg string) string {
	t.Helper()
	if err := BuildWasm(ctx, out, pkg); err != nil {
		t.Fatal(err)
	}
	return out
}

// BuildWasm is GoBuildWasm for callers without a testing.TB.
func BuildWasm(ctx context.Context, out, pkg string) error {
	if dir := os.Getenv(PrebuiltEnv); dir != "" {
		return copyPrebuiltWasm(dir, out, pkg)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("GOOS=wasip1 GOARCH=wasm go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// copyPrebuiltWasm copies pkg's module from dir to out.
func copyPrebuiltWasm(dir, out, pkg string) error {
	importPath := pkg
	if strings.HasPrefix(pkg, ".") {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		abs, err := filepath.Abs(pkg)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			return err
		}
		importPath = modulePath + "/" + filepath.ToSlash(rel)
	}
	b, err := os.ReadFile(filepath.Join(dir, strings.ReplaceAll(importPath, "/", "_")+".wasm"))
	if err != nil {
		return fmt.Errorf("%w (make test-windows builds the WebAssembly test plugins beforehand)", err)
	}
	return os.WriteFile(out, b, 0o644)
}
