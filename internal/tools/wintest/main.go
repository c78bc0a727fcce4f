package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// excluded are the packages left out as a whole, with the reason.
var excluded = map[string]string{
	"github.com/plugkit/plugkit/sandbox":                     "Linux isolation (namespaces, Landlock, cgroups, seccomp), which Windows does not have",
	"github.com/plugkit/plugkit/sandbox/internal/trampoline": "the sandbox's Linux re-exec trampoline",
	"github.com/plugkit/plugkit/internal/netnstest":          "Linux network namespaces",
	"github.com/plugkit/plugkit/internal/tools/wintest":      "this runner, which runs on Linux and starts Wine",
	"github.com/plugkit/plugkit":                             "repository checks (git ls-files, go doc, go list): they run git and the Go tool, which do not run under Wine, and check the source, not the system",
}

func main() {
	var cfg config
	flag.DurationVar(&cfg.timeout, "timeout", 20*time.Minute, "`limit` for each package's test binary")
	flag.StringVar(&cfg.run, "run", "", "run only the tests matching `regexp` (-test.run)")
	flag.StringVar(&cfg.work, "work", "", "`dir` for the Wine prefix and the binaries (default: a new temporary directory, removed at the end)")
	flag.BoolVar(&cfg.verbose, "v", false, "print every test's output, not only the failures'")
	flag.Parse()
	cfg.patterns = flag.Args()
	if len(cfg.patterns) == 0 {
		cfg.patterns = []string{"./..."}
	}
	ok, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wintest:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

type config struct {
	timeout  time.Duration
	run      string
	work     string
	verbose  bool
	patterns []string
}

// run prepares Wine and runs the packages' tests; ok is false when one failed.
func run(cfg config) (ok bool, err error) {
	start := time.Now()
	for _, tool := range []string{"wine", "wineserver", mingwGCC} {
		if _, err := exec.LookPath(tool); err != nil {
			return false, fmt.Errorf("%s is not on PATH: install Debian's wine, wine64 and gcc-mingw-w64-x86-64 (apt-get install wine wine64 gcc-mingw-w64-x86-64)", tool)
		}
	}
	if cfg.work == "" {
		if cfg.work, err = os.MkdirTemp("", "plugkit-wintest-"); err != nil {
			return false, err
		}
		defer os.RemoveAll(cfg.work)
	}
	w, err := newWine(cfg.work)
	if err != nil {
		return false, err
	}
	defer w.stop()
	pkgs, err := listPackages(cfg.patterns)
	if err != nil {
		return false, err
	}
	prebuilt := filepath.Join(cfg.work, "prebuilt")
	if err := prebuild(prebuilt); err != nil {
		return false, err
	}
	var sum summary
	for _, p := range pkgs {
		if reason, ok := excluded[p.ImportPath]; ok {
			sum.excludedPkgs = append(sum.excludedPkgs, p.ImportPath+": "+reason)
			continue
		}
		sum.unbuilt = append(sum.unbuilt, unbuiltTests(p)...)
		if !p.hasWindowsTests() {
			continue
		}
		res := runPackage(cfg, w, p, prebuilt)
		sum.add(res)
	}
	sum.print(os.Stdout, time.Since(start))
	return sum.failed == 0 && len(sum.brokenPkgs) == 0, nil
}

// command returns cmd with its output on ours and the given environment
// added, in a process group of its own so that a timeout ends it all.
func command(ctx context.Context, dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	ownGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runQuiet runs cmd and returns its combined output in the error when it
// fails. The output goes through a file, not a pipe: wineboot leaves
// processes behind that would hold a pipe open.
func runQuiet(cmd *exec.Cmd) error {
	f, err := os.CreateTemp("", "wintest-out-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(f.Name())
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return nil
}

// prebuild builds the module's main packages for windows/amd64 into dir.
func prebuild(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// ./... leaves testdata out: name the test plugins there one by one.
	patterns := []string{"./..."}
	filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") && strings.Contains(filepath.ToSlash(p), "/testdata/") {
			if dir := "./" + filepath.ToSlash(filepath.Dir(p)); !slices.Contains(patterns, dir) {
				patterns = append(patterns, dir)
			}
		}
		return nil
	})
	list := exec.Command("go", append([]string{"list", "-e", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`}, patterns...)...)
	out, err := list.Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	var mains []string
	for _, p := range strings.Fields(string(out)) {
		if _, skip := excluded[p]; !skip {
			mains = append(mains, p)
		}
	}
	for _, p := range mains {
		name := strings.ReplaceAll(p, "/", "_") + ".exe"
		cmd := command(context.Background(), "", []string{"GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0"}, "go", "build", "-o", filepath.Join(dir, name), p)
		if err := runQuiet(cmd); err != nil {
			return errors.New("building the plugins for windows: " + err.Error())
		}
	}
	for _, p := range wasmModules {
		name := strings.ReplaceAll(p, "/", "_") + ".wasm"
		cmd := command(context.Background(), "", []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"}, "go", "build", "-tags", "grpcnotrace", "-o", filepath.Join(dir, name), p)
		if err := runQuiet(cmd); err != nil {
			return errors.New("building the WebAssembly plugins: " + err.Error())
		}
	}
	for _, p := range wasmReactors {
		name := strings.ReplaceAll(p, "/", "_") + ".reactor.wasm"
		cmd := command(context.Background(), "", []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"}, "go", "build", "-buildmode=c-shared", "-tags", "grpcnotrace", "-o", filepath.Join(dir, name), p)
		if err := runQuiet(cmd); err != nil {
			return errors.New("building the WebAssembly plugins: " + err.Error())
		}
	}
	return nil
}

// wasmReactors are the plugins tests build for wasip1 with
// -buildmode=c-shared (testutil.BuildWasmReactor).
var wasmReactors = []string{"github.com/plugkit/plugkit/wasmhost/testdata/guest"}

// wasmModules are the plugins tests build for wasip1 (testutil.GoBuildWasm),
// which run under Wine as they are: one module for every system.
var wasmModules = []string{
	"github.com/plugkit/plugkit/wasmhost/testdata/guest",
	"github.com/plugkit/plugkit/wasmhost/testdata/fsguest",
	"github.com/plugkit/plugkit/examples/objectstore/plugins/memory",
	"github.com/plugkit/plugkit/examples/objectstore/plugins/fs",
}
