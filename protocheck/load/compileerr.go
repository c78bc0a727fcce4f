package load

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/ast"
	"github.com/bufbuild/protocompile/parser"
	"github.com/bufbuild/protocompile/reporter"

	"github.com/plugkit/plugkit/protocheck/report"
)

// CompileError reports .proto files that do not compile, each problem with
// its position, as the compiler gave it (not flattened to text).
type CompileError struct {
	// Input is the input being loaded.
	Input string
	// Against is set when Input is the input checked against (--against).
	Against bool
	// Problems are the individual problems, sorted by path and position.
	Problems []CompileProblem
	// ConfigFile is the input's buf configuration file, if it has one.
	ConfigFile string
	// MissingDeps are the deps of the input's buf configuration that
	// neither its buf.lock and buf's module cache nor an -I directory
	// supplied, e.g. "buf.build/gogo/protobuf".
	MissingDeps []string
}

// CompileProblem is one problem of a CompileError.
type CompileProblem struct {
	// Path is the file as shown to people: the input directory and the
	// file's module directory joined before its import path. It is empty
	// for a problem without a position.
	Path string
	// StartLine, StartColumn, EndLine and EndColumn are 1-based, with
	// columns counted in bytes as buf counts them in compile errors. A
	// problem at a single point has its end equal to its start.
	StartLine, StartColumn, EndLine, EndColumn int
	// Message is the compiler's description, e.g. "syntax error: unexpected
	// '}'" or "imported file does not exist".
	Message string
	// MissingImport is the import path no file supplies, for an import
	// that does not resolve; empty for other problems.
	MissingImport string
	// Err is the compiler's error (a reporter.ErrorWithPos when it has a
	// position), nil for a missing import found by scanning the files.
	Err error

	file string // the import path of the file, to re-root Path
}

// String formats the problem as "path:line:col: message".
func (p CompileProblem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.Path, p.StartLine, p.StartColumn, p.Message)
}

// Error lists every problem on its own line and, when imports are missing,
// says how to supply them.
func (e *CompileError) Error() string {
	label := "input"
	if e.Against {
		label = "--against input"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q does not compile:", label, e.Input)
	for _, p := range e.Problems {
		b.WriteString("\n")
		if p.MissingImport != "" {
			fmt.Fprintf(&b, "%s:%d:%d: import %q: no file of the input or of an -I directory has this path", p.Path, p.StartLine, p.StartColumn, p.MissingImport)
			continue
		}
		b.WriteString(p.String())
	}
	missing := e.MissingImports()
	if len(missing) > 0 && len(e.MissingDeps) > 0 {
		fmt.Fprintf(&b, "\n%s lists deps that are not in buf's module cache (run buf dep update and buf build once, or give each dependency's files with -I DIR): %s", e.ConfigFile, strings.Join(e.MissingDeps, ", "))
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "\nsupply the missing files with -I DIR (repeatable): a directory holding %s at that path (for a buf.yaml dependency, the module's checkout or buf's module cache)", strings.Join(missing, ", "))
	}
	return b.String()
}

// MissingImports returns the import paths that no file supplied, once
// each, in order of first appearance.
func (e *CompileError) MissingImports() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range e.Problems {
		if p.MissingImport != "" && !seen[p.MissingImport] {
			seen[p.MissingImport] = true
			out = append(out, p.MissingImport)
		}
	}
	return out
}

// joinPath joins a display root ("" for none) and a path.
func joinPath(root, p string) string {
	if root == "" {
		return p
	}
	return root + "/" + p
}

// newProblem turns a positioned compiler error into a problem, with buf's
// (byte) columns. cf is shared by the problems of one compilation, so that
// each file's lines are indexed once however many problems it has.
func newProblem(cf *columnFixer, root string, sources map[string][]byte, err reporter.ErrorWithPos) CompileProblem {
	pos := err.GetPosition()
	msg := err.Unwrap().Error()
	p := CompileProblem{Path: pos.Filename, StartLine: pos.Line, StartColumn: pos.Col, Message: msg, Err: err, file: pos.Filename}
	if src, ok := sources[pos.Filename]; ok {
		// A file of the input (not of an -I directory): show it below
		// the input's directory.
		p.Path = joinPath(root, pos.Filename)
		p.StartColumn = cf.byteColumn(&File{Path: pos.Filename, Source: src}, pos.Line, pos.Col)
	}
	p.EndLine, p.EndColumn = p.StartLine, p.StartColumn
	return p
}

// missingImports parses every source and reports each import that
// resolver cannot find, at the span of its import statement, as buf does
// ("imported file does not exist"). It runs only once a compilation failed
// on an unresolved import, which the compiler reports for the first only.
func missingImports(root string, sources map[string][]byte, resolver protocompile.Resolver) []CompileProblem {
	names := make([]string, 0, len(sources))
	for n := range sources {
		names = append(names, n)
	}
	sort.Strings(names)
	found := map[string]bool{}
	var out []CompileProblem
	var cf columnFixer
	for _, name := range names {
		src := sources[name]
		node, err := parser.Parse(name, bytes.NewReader(src), reporter.NewHandler(nil))
		if err != nil {
			continue // its syntax errors are reported by the compiler
		}
		file := &File{Path: name, Source: src}
		for _, decl := range node.Decls {
			imp, ok := decl.(*ast.ImportNode)
			if !ok {
				continue
			}
			dep := imp.Name.AsString()
			ok, seen := found[dep]
			if !seen {
				_, err := resolver.FindFileByPath(dep)
				ok = err == nil || !errors.Is(err, fs.ErrNotExist)
				found[dep] = ok
			}
			if ok {
				continue
			}
			start := node.NodeInfo(imp).Start()
			end := node.NodeInfo(imp).End()
			out = append(out, CompileProblem{
				Path:          joinPath(root, name),
				StartLine:     start.Line,
				StartColumn:   cf.byteColumn(file, start.Line, start.Col),
				EndLine:       end.Line,
				EndColumn:     cf.byteColumn(file, end.Line, end.Col),
				Message:       "imported file does not exist",
				MissingImport: dep,
				file:          name,
			})
		}
	}
	return out
}

// sortProblems orders problems by path and position.
func sortProblems(ps []CompileProblem) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		switch {
		case a.Path != b.Path:
			return a.Path < b.Path
		case a.StartLine != b.StartLine:
			return a.StartLine < b.StartLine
		}
		return a.StartColumn < b.StartColumn
	})
}

// Findings turns a CompileError into findings of type COMPILE, one
// per problem, as buf reports an input that does not compile: at the
// position of the problem (an unresolved import spans its import
// statement, other problems start and end at the same point), with the
// compiler's message. A problem without a position has no path and points
// at 0:0. Paths are as the error shows them (the input directory
// included), so print them with an empty path prefix.
func (e *CompileError) Findings() []report.Finding {
	out := make([]report.Finding, 0, len(e.Problems))
	for _, p := range e.Problems {
		out = append(out, report.Finding{Path: p.Path, StartLine: p.StartLine, StartColumn: p.StartColumn,
			EndLine: p.EndLine, EndColumn: p.EndColumn, Type: "COMPILE", Message: p.Message})
	}
	report.Sort(out)
	return out
}
