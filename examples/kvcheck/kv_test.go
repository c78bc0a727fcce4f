// Package kvcheck_test builds and tests examples/kv as the module of a
// plugkit user would be: its own go.mod, plugkit through a replace
// directive, nothing but the Go module cache.
package kvcheck_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/conformance"
	"github.com/plugkit/plugkit/internal/testutil"
)

// goCmd runs the go command in dir as an outside module: no workspace, a
// read-only go.mod, no proxy (the module cache holds what go.sum lists),
// and the GOFLAGS testutil.Main gives the tests (-trimpath) kept, so that
// the standard library and the modules compile as for the other tests.
func goCmd(ctx context.Context, t *testing.T, dir string, args ...string) {
	t.Helper()
	if _, err := goOut(ctx, dir, args...); err != nil {
		t.Fatal(err)
	}
}

// goOut is goCmd without a testing.T, for a goroutine: it returns the
// command's standard output, and an error holding all it wrote when it
// fails.
func goOut(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly "+os.Getenv("GOFLAGS"), "GOPROXY=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("go %s in %s: %v\n%s%s", strings.Join(args, " "), dir, err, out, stderr.Bytes())
	}
	return out, nil
}

// TestKVAsAnOutsideModule vets and tests the kv module, builds its plugins
// and runs its matrix command: mem direct on the v2 host and incompatible
// on the v1 host; memv1 through the adapter on v2, direct on v1. The
// three go commands run at once (they wait on the build cache's locks, not
// on each other). Its tests run through go test's cache: a result is
// replayed only while the kv module, plugkit (its replace directive) and
// the environment are what they were when it passed, as a user's go test
// would replay it.
func TestKVAsAnOutsideModule(t *testing.T) {
	t.Parallel()
	if testutil.UnderWine() {
		t.Skip("it runs the Go tool, which does not run under Wine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kv, err := filepath.Abs(filepath.Join("..", "kv"))
	if err != nil {
		t.Fatal(err)
	}
	plugins := t.TempDir()
	var matrix []byte
	errs := make([]error, 3)
	var wg sync.WaitGroup
	wg.Go(func() { _, errs[0] = goOut(ctx, kv, "vet", "./...") })
	wg.Go(func() { _, errs[1] = goOut(ctx, kv, "test", "./...") })
	wg.Go(func() {
		if _, errs[2] = goOut(ctx, kv, "build", "-o", plugins, "./plugins/..."); errs[2] == nil {
			matrix, errs[2] = goOut(ctx, kv, "run", "./cmd/kv-matrix", "--dir", plugins, "--json")
		}
	})
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var cells []conformance.Cell
	if err := json.Unmarshal(matrix, &cells); err != nil {
		t.Fatalf("kv-matrix --json: %v\n%s", err, matrix)
	}
	got := map[string]conformance.Mode{}
	for _, c := range cells {
		got[fmt.Sprintf("%s v%d", c.Plugin, c.HostMajor)] = c.Mode
	}
	want := map[string]conformance.Mode{
		"example.com/mem v2": conformance.ModeDirect, "example.com/mem v1": conformance.ModeIncompatible,
		"example.com/memv1 v2": conformance.ModeAdapter, "example.com/memv1 v1": conformance.ModeDirect,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("matrix cells %v, want %v", got, want)
	}
}

// TestHandWrittenLines keeps the examples as small as issue 24 promised:
// the lines of every Go file that is not generated (tests included for
// kv, not for greeter, as the issue counted them).
func TestHandWrittenLines(t *testing.T) {
	for _, tc := range []struct {
		dir   string
		tests bool
		max   int
	}{{"../kv", true, 200}, {"../greeter", false, 110}} {
		n := handWritten(t, tc.dir, tc.tests)
		t.Logf("%s: %d hand-written lines of Go", tc.dir, n)
		if n > tc.max {
			t.Errorf("%s has %d hand-written lines of Go; at most %d", tc.dir, n, tc.max)
		}
	}
}

// handWritten counts the lines of the non-generated Go files under dir.
func handWritten(t *testing.T, dir string, tests bool) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || (!tests && strings.HasSuffix(path, "_test.go")) {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil || ast.IsGenerated(f) {
			return err
		}
		file, err := os.Open(path)
		if err != nil {
			return err
		}
		defer file.Close()
		for s := bufio.NewScanner(file); s.Scan(); {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestYourOwnKindCommands runs the shell blocks of docs/your-own-kind.md
// that are not marked as illustrations, as the page says to: in a copy of
// examples/kv (so that nothing is written into the checkout) whose replace
// directive points at this checkout, with a plugkit command built from it
// first on PATH, as `go install ./cmd/plugkit` in a clone would leave it.
func TestYourOwnKindCommands(t *testing.T) {
	t.Parallel()
	root, blocks := yourOwnKindBlocks(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	kv := filepath.Join(t.TempDir(), "kv")
	if err := os.CopyFS(kv, os.DirFS(filepath.Join(root, "examples", "kv"))); err != nil {
		t.Fatal(err)
	}
	goCmd(ctx, t, kv, "mod", "edit", "-replace", "github.com/plugkit/plugkit="+root)
	bin := t.TempDir()
	testutil.GoBuild(ctx, t, filepath.Join(bin, "plugkit"), "github.com/plugkit/plugkit/cmd/plugkit")
	ran := 0
	for _, b := range blocks {
		if b.Illustration || b.First() == moduleSetup {
			continue // TestYourOwnKindModuleSetup runs the module's set-up
		}
		ran++
		out, err := runBlock(ctx, kv, b, "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
		if err != nil {
			t.Errorf("docs/your-own-kind.md:%d: %v\n%s\n%s", b.Line, err, b.Text, out)
			continue
		}
		t.Logf("docs/your-own-kind.md:%d:\n%s\n%s", b.Line, b.Text, out)
	}
	if ran < 2 {
		t.Errorf("docs/your-own-kind.md has %d shell blocks to run; it shows the matrix and plugins list", ran)
	}
}

// moduleSetup is the first command of docs/your-own-kind.md's block that
// starts a kind's module beside a clone of plugkit.
const moduleSetup = "go mod init example.com/kv"

// TestYourOwnKindModuleSetup runs the block of docs/your-own-kind.md that
// starts a module, as the page says to: in a new directory beside a clone
// of plugkit (here a link to this checkout), without the network. The
// module must then run its generator through go tool, as buf.gen.yaml does.
func TestYourOwnKindModuleSetup(t *testing.T) {
	t.Parallel()
	root, blocks := yourOwnKindBlocks(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var setup *testutil.DocBlock
	for i, b := range blocks {
		if b.First() == moduleSetup && !b.Illustration {
			setup = &blocks[i]
		}
	}
	if setup == nil {
		t.Fatalf("docs/your-own-kind.md has no shell block starting with %q: it shows how to start a kind's module", moduleSetup)
	}
	dir := t.TempDir()
	if err := os.Symlink(root, filepath.Join(dir, "plugkit")); err != nil {
		t.Fatal(err)
	}
	kv := filepath.Join(dir, "kv")
	if err := os.Mkdir(kv, 0o755); err != nil {
		t.Fatal(err)
	}
	// go mod tidy also reads the modules that the tests of plugkit's
	// dependencies import, which a fresh module cache lacks (the
	// checkout's builds never fetch them): this block may fetch them
	// through the module proxy, as a newcomer's go mod tidy does. Their
	// sums go into the scratch module's go.sum only; GOSUMDB=off because
	// a machine may reach the proxy and not sum.golang.org (as CI's).
	proxy := "GOPROXY=" + cmp.Or(os.Getenv("GOPROXY"), "https://proxy.golang.org,direct")
	if out, err := runBlock(ctx, kv, *setup, proxy, "GOSUMDB=off"); err != nil {
		t.Fatalf("docs/your-own-kind.md:%d: %v\n%s\n%s", setup.Line, err, setup.Text, out)
	}
	goCmd(ctx, t, kv, "tool", "-n", "protoc-gen-plugkit")
}

// yourOwnKindBlocks returns the checkout's root and the shell blocks of its
// docs/your-own-kind.md, and skips t under Wine, where the Go tool the
// blocks run does not run.
func yourOwnKindBlocks(t *testing.T) (string, []testutil.DocBlock) {
	t.Helper()
	if testutil.UnderWine() {
		t.Skip("it runs the Go tool, which does not run under Wine")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := testutil.DocShellBlocks(filepath.Join(root, "docs", "your-own-kind.md"))
	if err != nil {
		t.Fatal(err)
	}
	return root, blocks
}

// runBlock runs a doc's shell block in dir with bash -e, as a reader's
// shell would, the Go tool kept off the network (as goCmd does) and env
// added, and returns its output.
func runBlock(ctx context.Context, dir string, b testutil.DocBlock, env ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", b.Text)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly "+os.Getenv("GOFLAGS"), "GOPROXY=off"), env...)
	return cmd.CombinedOutput()
}
