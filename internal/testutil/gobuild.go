package testutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// goLink links the main package pkg with the Go tool's environment env
// (nil: this process's) and the build flags flags into the file out, as
// `go build -o out` does but without debug information.
//
// It has `go run` link the program and, instead of running it, copy it
// to out (-exec cp): since Go 1.24 the Go tool keeps what `go run` links
// in its build cache, keyed by everything that goes into the program, so
// a plugin that the tests of several packages build, run after run, is
// linked once and then copied from the cache (a fraction of a second
// instead of seconds of linking, per build). go run links with -s -w.
// The copy is the caller's to change; the cache's file is never handed
// out.
//
// Where there is no cp (Windows), it runs `go build -o out`.
func goLink(ctx context.Context, env []string, flags []string, out, pkg string) error {
	cp, err := exec.LookPath("cp")
	args := append(append([]string{"run", "-exec", cp}, flags...), pkg, out)
	how := "go run -exec cp"
	if runtime.GOOS == "windows" || err != nil {
		args = append(append([]string{"build"}, flags...), "-o", out, pkg)
		how = "go build -o"
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, GoTool(), args...)
	cmd.Env = env
	start := time.Now()
	b, err := cmd.CombinedOutput()
	logBuild("link", buildLogName(env, flags, pkg), start, cmd)
	if err != nil {
		return fmt.Errorf("go build %s (as %s): %v\n%s", strings.Join(append(flags, pkg), " "), how, err, b)
	}
	return nil
}

// copyExecutable copies the file src to dst (created with the mode perm,
// or truncated), making dst's directory if need be.
func copyExecutable(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		return errors.Join(err, out.Close())
	}
	return out.Close()
}

// buildLogName names a build for logBuild: the package, its flags, and
// GOOS when env sets it.
func buildLogName(env, flags []string, pkg string) string {
	name := strings.Join(append(flags, pkg), " ")
	for _, e := range env {
		if strings.HasPrefix(e, "GOOS=") {
			name = e + " " + name
		}
	}
	return name
}
