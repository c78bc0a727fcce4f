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
//
// It builds with -trimpath (as every go command the tests start does:
// see trimpathGOFLAGS), so that its compiles are make test's
// compile-plugins' and those of a build of the same packages in any other
// directory.
func goLink(ctx context.Context, env []string, flags []string, out, pkg string) error {
	cp, err := exec.LookPath("cp")
	build := append([]string{"-trimpath"}, flags...)
	args := append(append([]string{"run", "-exec", cp}, build...), pkg, out)
	how := "go run -exec cp"
	if runtime.GOOS == "windows" || err != nil {
		args = append(append([]string{"build"}, build...), "-o", out, pkg)
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

// trimpathGOFLAGS adds -trimpath to GOFLAGS in this process's environment,
// and so in that of every go command its tests start (a plugin's build,
// the docs' commands, cmd/plugkit's demo), unless GOFLAGS sets -trimpath
// already. Main calls it.
//
// Without -trimpath the Go build cache keys a compile of a package outside
// GOROOT and the module cache by its directory, and every package built
// from another directory than the checkout's (the docs' commands run in a
// clone of it, see TestDocCommandsFromRoot) compiled anew, on every fresh
// machine. With it, a package is keyed by its module's path and version:
// one compile serves make test's compile-plugins (which has -trimpath for
// that reason), the tests' plugins and the docs' commands, and the
// programs carry no path of the checkout.
func trimpathGOFLAGS() {
	flags := os.Getenv("GOFLAGS")
	for _, f := range strings.Fields(flags) {
		if name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "="); name == "trimpath" {
			return
		}
	}
	os.Setenv("GOFLAGS", strings.TrimSpace(flags+" -trimpath"))
}
