package plugkit

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// docCommandTests maps each shell block of README.md and docs/*.md that is
// not marked as an illustration, by "FILE: FIRST COMMAND", to the test that
// runs its commands: "DIR TestName", DIR from the repository's root. That
// test must read the commands from the doc (its package's tests name the doc
// file), so that the doc and what runs cannot drift apart.
var docCommandTests = map[string]string{
	"docs/your-own-kind.md: go build -o bin/ ./plugins/...              # one binary per plugin: bin/mem":                                       "examples/kvcheck TestYourOwnKindCommands",
	"README.md: go build -o plugins/ ./examples/objectstore/plugins/...   # plugins/memory, plugins/fs, plugins/future":                         ". " + rootRunner,
	"docs/remote.md: go build -o plugins/ ./examples/objectstore/plugins/...":                                                                   ". " + rootRunner,
	"docs/wasm.md: GOOS=wasip1 GOARCH=wasm go build -tags grpcnotrace -o memory.wasm ./examples/objectstore/plugins/memory":                     ". " + rootRunner,
	"docs/wasm.md: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -tags grpcnotrace -o memory.wasm ./examples/objectstore/plugins/memory": ". " + rootRunner,
	"docs/your-own-kind.md: plugkit plugins list --dir bin --cookie KV_PLUGIN=kv-5e0d":                                                          "examples/kvcheck TestYourOwnKindCommands",
	"docs/your-own-kind.md: go mod init example.com/kv":                                                                                         "examples/kvcheck TestYourOwnKindModuleSetup",
	"docs/observability.md: OTEL_TRACES_EXPORTER=otlp":                                                                                          "host TestPluginExportsOverOTLP",
}

// TestDocCommands keeps the commands of README.md and docs/*.md true: every
// fenced shell block is either run by the test docCommandTests names, or
// marked with testutil.IllustrationMark and parsed by bash -n.
func TestDocCommands(t *testing.T) {
	docs := docFiles(t)
	bash, bashErr := exec.LookPath("bash")
	seen := map[string]bool{}
	for _, doc := range docs {
		blocks, err := testutil.DocShellBlocks(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			key := filepath.ToSlash(doc) + ": " + b.First()
			where := fmt.Sprintf("%s:%d", filepath.ToSlash(doc), b.Line)
			runner, mapped := docCommandTests[key]
			switch {
			case mapped && b.Illustration:
				t.Errorf("%s: the block is marked %s, yet docCommandTests says %s runs it: drop one", where, testutil.IllustrationMark, runner)
			case mapped:
				seen[key] = true
			case b.Illustration:
				if bashErr != nil {
					t.Fatalf("bash is needed to parse the illustrations: %v", bashErr)
				}
				cmd := exec.Command(bash, "-n")
				cmd.Stdin = strings.NewReader(b.Text)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("%s: bash -n does not parse the illustration: %v\n%s", where, err, out)
				}
			default:
				t.Errorf("%s: no test runs this shell block (key %q): add it to docCommandTests with the test that runs it, or put %s on the line before it", where, key, testutil.IllustrationMark)
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(docCommandTests)) {
		if !seen[key] {
			t.Errorf("docCommandTests names %q, which no doc holds any more: remove the entry or fix the doc", key)
			continue
		}
		doc, _, _ := strings.Cut(key, ": ")
		dir, name, _ := strings.Cut(docCommandTests[key], " ")
		if dir == "." && name == rootRunner {
			continue // it reads the blocks through this map
		}
		if err := testReadsDoc(dir, name, filepath.Base(doc)); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
}

// testReadsDoc checks that the package in dir has the test name and that
// its tests name the doc file they read the commands from.
func testReadsDoc(dir, name, doc string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no test files in %s (%v)", dir, err)
	}
	decl := regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(name) + `\(t \*testing\.T\)`)
	var found, reads bool
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		found = found || decl.Match(src)
		reads = reads || strings.Contains(string(src), doc)
	}
	if !found {
		return fmt.Errorf("%s has no test %s", dir, name)
	}
	if !reads {
		return fmt.Errorf("the tests of %s never name %s: %s must read the commands from the doc", dir, doc, name)
	}
	return nil
}

// rootRunner is the test that runs the blocks docCommandTests gives it, as
// a reader would in the root of a clone.
const rootRunner = "TestDocCommandsFromRoot"

// TestDocCommandsFromRoot runs the shell blocks docCommandTests gives it in
// a directory that stands for the root of a clone (a symbolic link to each
// entry of the root), so that what they build lands there and not in the
// checkout. Their go commands build with -trimpath (testutil.Main's
// GOFLAGS), so that the packages they build, keyed by the module and not
// by the clone's directory, are the ones make test's compile-plugins and
// compile-wasm compiled: without it, each compiled again here, every
// package of the module they build on every run in a new directory, and
// the standard library and the modules as well for the WebAssembly ones
// (built without -trimpath nowhere else).
func TestDocCommandsFromRoot(t *testing.T) {
	if testutil.UnderWine() {
		t.Skip("it runs the Go tool, which does not run under Wine")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash runs the docs' commands: %v", err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	ran := 0
	for _, doc := range docFiles(t) {
		blocks, err := testutil.DocShellBlocks(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if docCommandTests[filepath.ToSlash(doc)+": "+b.First()] != ". "+rootRunner {
				continue
			}
			ran++
			if err := os.RemoveAll(clone); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(clone, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() == ".git" {
					continue
				}
				if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(clone, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			cmd := exec.CommandContext(ctx, bash, "-e", "-o", "pipefail", "-c", b.Text)
			cmd.Dir = clone
			out, err := cmd.CombinedOutput()
			cancel()
			if err != nil {
				t.Errorf("%s:%d: %v\n%s\n%s", filepath.ToSlash(doc), b.Line, err, b.Text, out)
			}
		}
	}
	if ran == 0 {
		t.Error("docCommandTests gives this test no block to run")
	}
}

// docFiles returns README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, docs...)
}
