package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// pkg is what go list tells of a package, built for windows/amd64.
type pkg struct {
	ImportPath     string
	Dir            string
	TestGoFiles    []string
	XTestGoFiles   []string
	IgnoredGoFiles []string
}

// listPackages lists the packages patterns match, as Windows sees them.
func listPackages(patterns []string) ([]pkg, error) {
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Dir,TestGoFiles,XTestGoFiles,IgnoredGoFiles"}, patterns...)...)
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list's output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// hasWindowsTests reports whether the package has test files for Windows.
func (p pkg) hasWindowsTests() bool { return len(p.TestGoFiles)+len(p.XTestGoFiles) > 0 }

// unbuiltTests lists the tests in the package's test files that Windows
// does not build, each with the file and the build constraint that leaves
// it out, as one line.
func unbuiltTests(p pkg) []string {
	var out []string
	for _, name := range p.IgnoredGoFiles {
		if !strings.HasSuffix(name, "_test.go") {
			continue
		}
		if !mustMatch(linux, p.Dir, name) {
			continue // left out on Linux too (a build tag such as corpus): not a Windows matter
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments)
		if err != nil {
			continue
		}
		var tests []string
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && (strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" || strings.HasPrefix(fn.Name.Name, "Example")) {
				tests = append(tests, fn.Name.Name)
			}
		}
		if len(tests) == 0 {
			continue
		}
		sort.Strings(tests)
		rel := strings.TrimPrefix(p.ImportPath, "github.com/plugkit/plugkit/")
		out = append(out, fmt.Sprintf("%s/%s (%s): %s", rel, name, constraint(f, name), strings.Join(tests, ", ")))
	}
	return out
}

// constraint describes why Windows does not build file f (called name).
func constraint(f *ast.File, name string) string {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "//go:build ") {
				return strings.TrimPrefix(c.Text, "//")
			}
		}
	}
	base := strings.TrimSuffix(name, "_test.go")
	if i := strings.LastIndexByte(base, '_'); i >= 0 {
		return "file name: " + base[i+1:] + " only"
	}
	return "build constraint"
}

// linux is the build context of make test: Linux, no extra tags.
var linux = func() build.Context {
	c := build.Default
	c.GOOS, c.GOARCH, c.BuildTags = "linux", "amd64", nil
	return c
}()

// mustMatch reports whether ctx builds file name in dir.
func mustMatch(ctx build.Context, dir, name string) bool {
	ok, err := ctx.MatchFile(dir, name)
	return err == nil && ok
}
