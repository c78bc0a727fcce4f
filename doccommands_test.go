package plugkit

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// TestDocCommandsFromRoot runs the shell blocks docCommandTests gives it,
// each in a directory that stands for the root of a clone (a symbolic
// link to each entry of the root), so that what they build lands there
// and not in the checkout.
//
// Their go commands build with -trimpath (testutil.Main's GOFLAGS), so
// that the packages they build, keyed by the module and not by the
// clone's directory, are the ones make test's compile-plugins and
// compile-wasm compiled: without it, every package of the module they
// build compiled again in the clone, and for the WebAssembly blocks the
// standard library and the modules as well (nothing else builds them
// without -trimpath).
//
// A block's directory is kept from one run to the next (blockDirs), with
// what the block built there: go build then finds a program it would link
// again up to date (its build ID is that of the link it would do) and
// skips the link, as in a reader's clone where the command runs a second
// time. A block must therefore do the same when run twice (mkdir -p, not
// mkdir), as a reader's commands should.
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
	dirs := blockDirs(t, root)
	used := map[string]bool{}
	for _, doc := range docFiles(t) {
		blocks, err := testutil.DocShellBlocks(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if docCommandTests[filepath.ToSlash(doc)+": "+b.First()] != ". "+rootRunner {
				continue
			}
			sum := sha256.Sum256([]byte(b.Text))
			name := fmt.Sprintf("%x", sum[:8])
			used[name] = true
			clone := filepath.Join(dirs, name)
			if err := linkRoot(clone, root, entries); err != nil {
				t.Fatal(err)
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
	if len(used) == 0 {
		t.Error("docCommandTests gives this test no block to run")
	}
	// The directories of blocks that the docs no longer hold go.
	kept, err := os.ReadDir(dirs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range kept {
		if !used[e.Name()] {
			if err := os.RemoveAll(filepath.Join(dirs, e.Name())); err != nil {
				t.Error(err)
			}
		}
	}
}

// linkRoot makes clone stand for the root of a clone of root: a symbolic
// link to each of entries (root's, .git aside), made anew. What else clone
// holds, what its block built there on its last run, is kept, unless an
// entry of the root now has its name.
func linkRoot(clone, root string, entries []os.DirEntry) error {
	if err := os.MkdirAll(clone, 0o755); err != nil {
		return err
	}
	have, err := os.ReadDir(clone)
	if err != nil {
		return err
	}
	for _, e := range have {
		if e.Type()&fs.ModeSymlink != 0 {
			if err := os.Remove(filepath.Join(clone, e.Name())); err != nil {
				return err
			}
		}
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		link := filepath.Join(clone, e.Name())
		if err := os.RemoveAll(link); err != nil {
			return err
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), link); err != nil {
			return err
		}
	}
	return nil
}

// blockDirs returns the directory that holds TestDocCommandsFromRoot's
// directories, one per block, for the checkout at root: the same on every
// run in that checkout, under os.UserCacheDir(), and kept after the test
// (some 230 MB: the programs the blocks build) until the checkout is gone
// (removeGoneCheckouts; a file beside it names the checkout). A file
// beside it holding the process ID keeps two runs of the same checkout out
// of each other's way: while the process that holds it lives, another run
// takes a new temporary directory instead (correct, only slower: every
// link done anew). That file is removed when the test ends.
func blockDirs(t *testing.T, root string) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		return t.TempDir()
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(base, "plugkit-test", fmt.Sprintf("docblocks-%x", sum[:8]))
	owner := dir + ".pid"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(owner, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = fmt.Fprint(f, os.Getpid())
			if err = errors.Join(err, f.Close()); err != nil {
				t.Fatal(err)
			}
			break
		}
		b, _ := os.ReadFile(owner)
		if pid, err := strconv.Atoi(string(b)); attempt > 0 || (err == nil && testutil.Exists(pid)) {
			t.Logf("%s is in use by process %s: running the blocks in a new directory, where every program they build is linked anew", dir, b)
			return t.TempDir()
		}
		os.Remove(owner) // left by a run that was killed
	}
	t.Cleanup(func() { os.Remove(owner) })
	if err := os.WriteFile(dir+".checkout", []byte(root), 0o644); err != nil {
		t.Fatal(err)
	}
	removeGoneCheckouts(t, filepath.Dir(dir))
	return dir
}

// removeGoneCheckouts removes the blocks' directories (blockDirs) of
// checkouts that no longer exist, such as a worktree removed, which would
// otherwise keep their programs for ever. One a run holds (its process ID
// file is there) is left.
func removeGoneCheckouts(t *testing.T, base string) {
	t.Helper()
	marks, err := filepath.Glob(filepath.Join(base, "docblocks-*.checkout"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mark := range marks {
		root, err := os.ReadFile(mark)
		if err != nil {
			continue
		}
		if _, err := os.Stat(string(root)); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		dir := strings.TrimSuffix(mark, ".checkout")
		if _, err := os.Lstat(dir + ".pid"); err == nil {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
			continue
		}
		os.Remove(mark)
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
