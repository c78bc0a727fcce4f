package testutil

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// GoBuild hands each caller a copy of its own: what one test does to its
// program (here, overwrite it) does not reach the next build of the same
// package, which still runs.
func TestGoBuildHandsOutCopies(t *testing.T) {
	if UnderWine() {
		t.Skip("the Go tool does not run under Wine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := TempDir(t)
	log := filepath.Join(dir, "builds.log")
	t.Setenv(BuildLogEnv, log)
	first := GoBuild(ctx, t, filepath.Join(dir, "first", "hello"), "./testdata/hello")
	if err := os.WriteFile(first, []byte("spoiled"), 0o755); err != nil {
		t.Fatal(err)
	}
	second := GoBuild(ctx, t, filepath.Join(dir, "second", "hello"), "./testdata/hello")
	out, err := exec.CommandContext(ctx, second).Output()
	if err != nil || string(out) != "hello from testdata/hello\n" {
		t.Fatalf("the second build: %q, %v; want the program's greeting (a build must not share its file with another)", out, err)
	}
	if fi, err := os.Stat(second); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm()&0o100 == 0) {
		t.Fatalf("the build's mode: %v, %v; want it executable", fi, err)
	}
	// BuildLogEnv's file has a line for each build, naming the package.
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("%s: %v; want a line for each build", BuildLogEnv, err)
	}
	if lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "link\t./testdata/hello\t") {
		t.Fatalf("%s's file holds %q; want two lines, each starting \"link\\t./testdata/hello\\t\"", BuildLogEnv, b)
	}
}

// A module GoBuildWasm builds keeps its name section (the guest's
// function names in traps), as go build writes it.
func TestGoBuildWasmKeepsNames(t *testing.T) {
	if UnderWine() {
		t.Skip("the Go tool does not run under Wine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	module := GoBuildWasm(ctx, t, filepath.Join(TempDir(t), "hello.wasm"), "./testdata/hello")
	b, err := os.ReadFile(module)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x00asm")) {
		t.Fatalf("%s is not a WebAssembly module: it starts %q", module, b[:min(len(b), 8)])
	}
	if !hasCustomSection(t, b, "name") {
		t.Fatal("the module has no name section: it was linked with -s")
	}
}

// hasCustomSection reports whether the WebAssembly module b has a custom
// section called name.
func hasCustomSection(t *testing.T, b []byte, name string) bool {
	t.Helper()
	uleb := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatal("a section runs past the module's end")
		}
		b = b[n:]
		return v
	}
	for b = b[8:]; len(b) > 0; {
		id := b[0]
		b = b[1:]
		size := uleb()
		if size > uint64(len(b)) {
			t.Fatal("a section runs past the module's end")
		}
		payload := b[:size]
		b = b[size:]
		if id != 0 {
			continue
		}
		rest := b
		b = payload
		n := uleb()
		found := n <= uint64(len(b)) && string(b[:n]) == name
		b = rest
		if found {
			return true
		}
	}
	return false
}

// A program GoBuild builds holds no path of the checkout (-trimpath): its
// compiles are keyed by the module, not by the directory, and serve every
// other build of the same packages, from any directory (make test's
// compile-plugins, the docs' commands in a clone).
func TestGoBuildTrimsPaths(t *testing.T) {
	if UnderWine() {
		t.Skip("the Go tool does not run under Wine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := GoBuild(ctx, t, filepath.Join(TempDir(t), "hello"), "./testdata/hello")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.Index(b, []byte(root)); i >= 0 {
		t.Fatalf("the program holds the checkout's directory %s (%q...): it was built without -trimpath", root, b[i:min(len(b), i+len(root)+40)])
	}
	if !bytes.Contains(b, []byte("github.com/plugkit/plugkit/internal/testutil/testdata/hello")) {
		t.Fatal("the program holds no path of its package at all: the check above proves nothing")
	}
}

// Main gives the go commands the tests start -trimpath, keeping what
// GOFLAGS says.
func TestTrimpathGOFLAGS(t *testing.T) {
	if f := strings.Fields(os.Getenv("GOFLAGS")); !slices.Contains(f, "-trimpath") {
		t.Errorf("under Main, GOFLAGS is %q; want -trimpath in it", os.Getenv("GOFLAGS"))
	}
	for in, want := range map[string]string{
		"":                 "-trimpath",
		"-mod=mod":         "-mod=mod -trimpath",
		"-trimpath -mod=x": "-trimpath -mod=x",
		"--trimpath=false": "--trimpath=false",
	} {
		t.Setenv("GOFLAGS", in)
		trimpathGOFLAGS()
		if got := os.Getenv("GOFLAGS"); got != want {
			t.Errorf("GOFLAGS %q: trimpathGOFLAGS made it %q, want %q", in, got, want)
		}
	}
}

// make test's compile-plugins compiles as the tests build (-trimpath):
// otherwise every package a test's program or a doc's command builds
// compiles again. Staticcheck's build, which finds the standard library
// compiled by compile-plugins, has it too.
func TestMakefileCompilesAsTestsBuild(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	_, rule, ok := strings.Cut(string(b), "\ncompile-plugins:\n")
	if !ok {
		t.Fatal("the Makefile has no rule compile-plugins: fix this test with it")
	}
	recipe, _, _ := strings.Cut(rule, "\n")
	if !slices.Contains(strings.Fields(recipe), "-trimpath") {
		t.Errorf("the Makefile's compile-plugins runs %q: without -trimpath, its compiles are not the ones the tests' builds use (goLink, trimpathGOFLAGS)", strings.TrimSpace(recipe))
	}
	_, rest, _ := strings.Cut(string(b), "\n$(STATICCHECK):")
	for line := range strings.Lines(rest) {
		if strings.Contains(line, "honnef.co/go/tools/cmd/staticcheck") {
			if !strings.Contains(line, "GOFLAGS=-trimpath") {
				t.Errorf("the Makefile builds staticcheck with %q: without GOFLAGS=-trimpath it compiles the standard library again rather than use compile-plugins'", strings.TrimSpace(line))
			}
			return
		}
	}
	t.Error("the Makefile has no rule $(STATICCHECK) that builds honnef.co/go/tools/cmd/staticcheck: fix this test with it")
}
