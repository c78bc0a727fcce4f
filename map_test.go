package plugkit

import (
	"cmp"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// modulePath is the module's import path.
const modulePath = "github.com/plugkit/plugkit"

// listedPackage is one package of the module as go list gives it.
type listedPackage struct {
	rel  string // its path from the module's root, slash-separated
	name string // its package name
}

// modulePackages lists every package of the module (go list ./...), for
// the default build of this system: listed once per test binary, since
// each go list of the module costs a second or so of CPU.
func modulePackages(t *testing.T) []listedPackage {
	t.Helper()
	pkgs, err := listModule()
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// listModule is go list ./..., run once.
var listModule = sync.OnceValues(func() ([]listedPackage, error) {
	out, err := exec.Command(testutil.GoTool(), "list", "-f", "{{.ImportPath}} {{.Name}}", "./...").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return nil, fmt.Errorf("go list ./...: %v\n%s", err, stderr)
	}
	var pkgs []listedPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		imp, name, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("go list printed %q, want IMPORTPATH NAME", line)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(imp, modulePath), "/")
		pkgs = append(pkgs, listedPackage{rel: cmp.Or(rel, "."), name: name})
	}
	if len(pkgs) < 10 {
		return nil, fmt.Errorf("go list ./... listed %d packages; the module has dozens", len(pkgs))
	}
	return pkgs, nil
})

// publicPackages are the packages a reader of the map must find: every
// package of the module but the root (the map itself), those under an
// internal directory, the examples and the generated code, and commands
// outside cmd/ (the tools of the examples, the SDKs and the benchmarks).
// Sorted by path.
func publicPackages(t *testing.T) []listedPackage {
	t.Helper()
	var public []listedPackage
	for _, p := range modulePackages(t) {
		elems := strings.Split(p.rel, "/")
		switch {
		case p.rel == ".",
			slices.Contains(elems, "internal"),
			elems[0] == "examples", elems[0] == "gen",
			p.name == "main" && (elems[0] != "cmd" || len(elems) != 2):
			continue
		}
		public = append(public, p)
	}
	slices.SortFunc(public, func(a, b listedPackage) int { return strings.Compare(a.rel, b.rel) })
	return public
}

// libraryPackages are the public packages that are not commands: those
// whose documentation a program that imports them reads.
func libraryPackages(t *testing.T) []string {
	t.Helper()
	var libs []string
	for _, p := range publicPackages(t) {
		if p.name != "main" {
			libs = append(libs, p.rel)
		}
	}
	return libs
}

// mapBullet matches a bullet of doc.go's map, its lines joined: "- NAMES:
// text", NAMES being package paths separated by ", " or " and ".
var mapBullet = regexp.MustCompile(`^- ([a-z0-9/_.-]+(?:(?:, | and )[a-z0-9/_.-]+)*):`)

// mapNames returns the package paths the bullets of doc.go's package
// comment name, each with the number of the comment's line its bullet
// starts on.
func mapNames(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("doc.go has no package comment")
	}
	names := map[string]int{}
	var bullet string // the bullet being read, its lines joined
	start := 0
	flush := func() {
		if m := mapBullet.FindStringSubmatch(bullet); m != nil {
			for _, n := range strings.FieldsFunc(strings.ReplaceAll(m[1], " and ", ","), func(r rune) bool { return r == ',' || r == ' ' }) {
				names[n] = start
			}
		}
		bullet = ""
	}
	for i, line := range strings.Split(f.Doc.Text(), "\n") {
		text := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(text, "- "):
			flush()
			bullet, start = text, i+1
		case bullet != "" && text != "" && strings.HasPrefix(line, " "):
			bullet += " " + text
		default:
			flush()
		}
	}
	flush()
	return names
}

// TestDocGoMapsEveryPublicPackage fails when doc.go, which calls itself
// the map of the packages, leaves out a public package of the module or
// names one that is gone.
func TestDocGoMapsEveryPublicPackage(t *testing.T) {
	names := mapNames(t)
	public := map[string]bool{}
	for _, p := range publicPackages(t) {
		public[p.rel] = true
		if _, ok := names[p.rel]; !ok {
			t.Errorf("doc.go's map does not name package %s: add a bullet \"  - %s: what it does\" (or add it to the bullet of its siblings)", p.rel, p.rel)
		}
	}
	for n, line := range names {
		if !public[n] {
			t.Errorf("doc.go's map names %q (line %d of its comment), which is not a public package of the module: remove it, or fix its path", n, line)
		}
	}
}

// readmeTableNames returns the backquoted names in the first column of
// README.md's package table (the one headed "| package |").
func readmeTableNames(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	quoted := regexp.MustCompile("`([^`]+)`")
	var names []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "| package |"):
			in = true
		case in && !strings.HasPrefix(line, "|"):
			return names
		case in:
			first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
			for _, m := range quoted.FindAllStringSubmatch(first, -1) {
				names = append(names, m[1])
			}
		}
	}
	if !in {
		t.Fatal(`README.md has no package table (a table headed "| package | what lives there |")`)
	}
	return names
}

// TestReadmeTableListsEveryPublicPackage fails when README's package table
// leaves out a public package of the module, or names a directory that
// is not there.
func TestReadmeTableListsEveryPublicPackage(t *testing.T) {
	names := readmeTableNames(t)
	for _, p := range publicPackages(t) {
		if !slices.Contains(names, p.rel) {
			t.Errorf("README.md's package table does not name %s: add `%s` to the first column of its row (a row of its own, or its siblings')", p.rel, p.rel)
		}
	}
	for _, n := range names {
		if fi, err := os.Stat(n); err != nil || !fi.IsDir() {
			t.Errorf("README.md's package table names `%s`, which is not a directory of the module: remove it, or fix its path", n)
		}
	}
}

// fileSignpost matches a comment that only names the file where
// something lives (discover.go, or a list of files, alone or before a
// colon and a reason): a signpost that goes stale when code moves, and
// that gopls, go doc and grep answer better.
var fileSignpost = regexp.MustCompile(`// [a-z0-9_]+\.go(?:, [a-z0-9_]+\.go)*(?::.*)?$`)

// TestNoFileSignposts fails on a comment that points at a file by name
// instead of saying what the code does.
func TestNoFileSignposts(t *testing.T) {
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if fileSignpost.MatchString(line) {
				t.Errorf("%s:%d: %q points at a file by name: say what the code does instead, or nothing", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
