package plugkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// seamsLeft lists the package variables tests still assign (issue 38,
// point 6), as "dir.name" (dir from the module's root), each with why it
// is left. Keep it empty: give
// the code a field or parameter the test passes instead.
var seamsLeft = map[string]string{}

// TestNoPackageVariableIsATestSeam: no test assigns a package variable of
// the code it tests (nor takes its address, to assign it elsewhere), as a
// hidden seam would: such tests cannot run in parallel, and the code's
// behaviour depends on state a reader cannot see at the call. A test
// passes what it changes (a field, a parameter) instead.
func TestNoPackageVariableIsATestSeam(t *testing.T) {
	pkgs := parseModule(t)
	var found []string
	for dir, p := range pkgs {
		vars := p.vars()
		for _, f := range p.tests {
			for _, s := range f.seams(vars) {
				if _, ok := seamsLeft[dir+"."+s.name]; ok {
					continue
				}
				found = append(found, s.pos+": "+s.name)
			}
		}
		// An external test package reaches the exported ones.
		for _, f := range p.externalTests {
			for _, s := range f.externalSeams(path.Join(modulePath, dir), vars) {
				found = append(found, s.pos+": "+s.name)
			}
		}
	}
	slices.Sort(found)
	for _, s := range found {
		t.Errorf("%s: a test assigns this package variable (or takes its address): make it a field or parameter the test passes", s)
	}
	for key := range seamsLeft {
		i := strings.LastIndex(key, ".")
		dir, name := key[:i], key[i+1:]
		if p := pkgs[dir]; p == nil || !p.vars()[name] {
			t.Errorf("seamsLeft lists %s, which is no longer a package variable: remove it from the list", key)
		}
	}
}

// seamPackage is one directory's Go files: its package's own, its
// in-package tests, and its external tests (package x_test).
type seamPackage struct {
	fset                 *token.FileSet
	files                []*ast.File
	tests, externalTests []seamFile
}

type seamFile struct {
	fset *token.FileSet
	file *ast.File
}

// seam is one assignment of a package variable in a test.
type seam struct{ pos, name string }

// parseModule parses every Go file of the module but generated code and
// test data, by directory.
func parseModule(t *testing.T) map[string]*seamPackage {
	t.Helper()
	fset := token.NewFileSet()
	pkgs := map[string]*seamPackage{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || p == "gen") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && p != "." {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		pkg := pkgs[dir]
		if pkg == nil {
			pkg = &seamPackage{fset: fset}
			pkgs[dir] = pkg
		}
		switch {
		case !strings.HasSuffix(p, "_test.go"):
			pkg.files = append(pkg.files, f)
		case strings.HasSuffix(f.Name.Name, "_test"):
			pkg.externalTests = append(pkg.externalTests, seamFile{fset, f})
		default:
			pkg.tests = append(pkg.tests, seamFile{fset, f})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// vars returns the names of the package-level variables the package's
// own (non-test) files declare.
func (p *seamPackage) vars() map[string]bool {
	vars := map[string]bool{}
	for _, f := range p.files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					if n.Name != "_" {
						vars[n.Name] = true
					}
				}
			}
		}
	}
	return vars
}

// changed returns the expressions n changes: the left side of an
// assignment (=, op=, not :=), the operand of ++ or --, and the operand
// of & (whose address lets it be changed elsewhere).
func changed(n ast.Node) []ast.Expr {
	switch n := n.(type) {
	case *ast.AssignStmt:
		if n.Tok != token.DEFINE {
			return n.Lhs
		}
	case *ast.IncDecStmt:
		return []ast.Expr{n.X}
	case *ast.UnaryExpr:
		if n.Op == token.AND {
			return []ast.Expr{n.X}
		}
	}
	return nil
}

// within returns, for a change of e, the expression changed with it: x
// for x.f, x[i], *x and (x); nil when there is none.
func within(e ast.Expr) ast.Expr {
	switch e := e.(type) {
	case *ast.SelectorExpr:
		return e.X
	case *ast.IndexExpr:
		return e.X
	case *ast.StarExpr:
		return e.X
	case *ast.ParenExpr:
		return e.X
	}
	return nil
}

// seams finds, in an in-package test file, the changes (changed) of vars,
// where no declaration in the test file shadows the name.
func (f seamFile) seams(vars map[string]bool) []seam {
	var found []seam
	var walk func(n ast.Node, shadowed map[string]bool)
	walk = func(n ast.Node, shadowed map[string]bool) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				walk(n.Body, withLocals(shadowed, nil, n.Type, n.Body))
				return false
			case *ast.FuncDecl:
				if n.Body != nil {
					walk(n.Body, withLocals(shadowed, n.Recv, n.Type, n.Body))
				}
				return false
			}
			for _, e := range changed(n) {
				for ; e != nil; e = within(e) {
					if id, ok := e.(*ast.Ident); ok && vars[id.Name] && !shadowed[id.Name] {
						found = append(found, seam{f.fset.Position(n.Pos()).String(), id.Name})
					}
				}
			}
			return true
		})
	}
	walk(f.file, map[string]bool{})
	return found
}

// withLocals adds to shadowed the names a function declares: its
// receiver, parameters and results, and every name its body defines (:=, var), a
// conservative reading (a name defined anywhere in the body counts as
// shadowed throughout it).
func withLocals(shadowed map[string]bool, recv *ast.FieldList, typ *ast.FuncType, body *ast.BlockStmt) map[string]bool {
	out := maps.Clone(shadowed)
	for _, fl := range []*ast.FieldList{recv, typ.Params, typ.Results} {
		if fl == nil {
			continue
		}
		for _, field := range fl.List {
			for _, n := range field.Names {
				out[n.Name] = true
			}
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // its own scope
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						out[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				out[id.Name] = true
			}
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if id, ok := e.(*ast.Ident); ok {
						out[id.Name] = true
					}
				}
			}
		}
		return true
	})
	return out
}

// externalSeams finds, in an external test file, the changes (changed)
// of the exported vars of the package at importPath: pkg.X = ...,
// pkg.X.f = ..., *pkg.X = ..., &pkg.X.
func (f seamFile) externalSeams(importPath string, vars map[string]bool) []seam {
	name := ""
	for _, imp := range f.file.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
			name = path.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" {
		return nil
	}
	var found []seam
	ast.Inspect(f.file, func(n ast.Node) bool {
		for _, e := range changed(n) {
			for ; e != nil; e = within(e) {
				if sel, ok := e.(*ast.SelectorExpr); ok && vars[sel.Sel.Name] {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == name {
						found = append(found, seam{f.fset.Position(n.Pos()).String(), name + "." + sel.Sel.Name})
					}
				}
			}
		}
		return true
	})
	return found
}
