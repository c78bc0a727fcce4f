package plugkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// internalPackageNames lists the package names under internal/ (a
// package is named after its directory here).
func internalPackageNames(t *testing.T) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir("internal", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir // not packages of the module
		}
		if d.IsDir() {
			if goFiles, _ := filepath.Glob(filepath.Join(path, "*.go")); len(goFiles) > 0 {
				names = append(names, d.Name())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestPublicDocNamesNoInternal runs go doc -all on the module's library
// packages (libraryPackages: every public package but the commands) and
// fails on a declaration (not a comment) that uses an identifier of an
// internal package, such as `Unix listen.UnixConfig` or
// `Send(*pluginpb.ConnInfo) error`.
func TestPublicDocNamesNoInternal(t *testing.T) {
	uses := regexp.MustCompile(`\b(` + strings.Join(internalPackageNames(t), "|") + `)\.[A-Z]`)
	goTool := testutil.GoTool()
	for _, pkg := range libraryPackages(t) {
		out, err := exec.Command(goTool, "doc", "-all", "./"+pkg).Output()
		if err != nil {
			t.Fatalf("go doc -all %s: %v", pkg, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "    ") || strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue // documentation, not a declaration
			}
			if uses.MatchString(line) {
				t.Errorf("go doc -all %s declares %q, which names an internal package: move it behind internal/ or give it a public type", pkg, strings.TrimSpace(line))
			}
		}
	}
}

// goPackages parses the non-test Go files of every package of the module
// (testdata and hidden directories left out) and returns them by
// directory, with generated files marked.
func goPackages(t *testing.T) map[string][]parsedFile {
	t.Helper()
	fset := token.NewFileSet()
	pkgs := map[string][]parsedFile{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		pkgs[dir] = append(pkgs[dir], parsedFile{name: filepath.Base(path), file: f, generated: ast.IsGenerated(f), fset: fset})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

type parsedFile struct {
	name      string
	file      *ast.File
	generated bool
	fset      *token.FileSet
}

// TestPackagesHaveDocGo checks that every package a person wrote has its
// package comment, and that a library package keeps it in doc.go, where a
// reader looks for it. Generated packages are left out.
func TestPackagesHaveDocGo(t *testing.T) {
	for dir, files := range goPackages(t) {
		var docGo, comment, written bool
		var name string
		for _, pf := range files {
			name = pf.file.Name.Name
			written = written || !pf.generated
			if pf.file.Doc != nil {
				comment = true
				docGo = docGo || pf.name == "doc.go"
			}
		}
		switch {
		case !written:
		case name == "main" && !comment:
			t.Errorf("%s: command has no package comment: say what it does above `package main`", dir)
		case name != "main" && !docGo:
			t.Errorf("%s: package %s has no doc.go with its package comment: put the `// Package %s ...` comment there", dir, name, name)
		}
	}
}

// TestExportedNamesDocumented checks that every exported top-level name
// and every exported method of an exported type, outside generated code,
// has a doc comment (a const or var may be documented by its group).
func TestExportedNamesDocumented(t *testing.T) {
	for _, files := range goPackages(t) {
		for _, pf := range files {
			if pf.generated {
				continue
			}
			for _, missing := range undocumented(pf.file) {
				t.Errorf("%s: %s has no doc comment: say what it is or does, starting with its name", pf.fset.Position(missing.Pos()), missing.Name)
			}
		}
	}
}

// undocumented returns the exported names f declares without a doc
// comment.
func undocumented(f *ast.File) []*ast.Ident {
	var missing []*ast.Ident
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && d.Doc == nil && exportedReceiver(d) {
				missing = append(missing, d.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
						missing = append(missing, s.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Doc == nil && d.Doc == nil && s.Comment == nil {
							missing = append(missing, n)
						}
					}
				}
			}
		}
	}
	return missing
}

// exportedReceiver reports whether d is a function, or a method of an
// exported type (methods of unexported types are not in go doc).
func exportedReceiver(d *ast.FuncDecl) bool {
	if d.Recv == nil {
		return true
	}
	t := d.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	id, ok := t.(*ast.Ident)
	return !ok || id.IsExported()
}
