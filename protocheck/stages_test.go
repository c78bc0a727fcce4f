package protocheck

import (
	"go/parser"
	gotoken "go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestStageImports keeps protocheck's stages in order (issue 21): each
// stage package imports only the stages before it, so a tool that needs
// one stage links no later one.
func TestStageImports(t *testing.T) {
	const base = "github.com/plugkit/plugkit/protocheck"
	allowed := map[string][]string{
		"report":    nil,
		"ruleset":   nil,
		"bufconfig": {"ruleset"},
		"load":      {"bufconfig", "report"},
	}
	for pkg, want := range allowed {
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v)", pkg, err)
		}
		seen := map[string]bool{}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(gotoken.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if p == base || strings.HasPrefix(p, base+"/") {
					seen[strings.TrimPrefix(strings.TrimPrefix(p, base), "/")] = true
				}
			}
		}
		var got []string
		for p := range seen {
			got = append(got, p)
		}
		sort.Strings(got)
		for _, p := range got {
			ok := false
			for _, w := range want {
				ok = ok || p == w
			}
			if !ok {
				t.Errorf("stage %s imports protocheck/%s; it may import only %v", pkg, p, want)
			}
		}
	}
}
