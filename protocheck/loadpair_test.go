package protocheck

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// TestLoadPairSameFindings checks, over every pair of the history and
// every category, that LoadPair (which reuses against's compiled files for
// unchanged ones) gives exactly the findings of two separate Loads, and
// that it does reuse: an unchanged file is the very descriptor of against.
func TestLoadPairSameFindings(t *testing.T) {
	ctx := context.Background()
	lo := load.LoadOptions{Dir: historyDir}
	reused := 0
	for _, p := range historyPairs(t) {
		cur, old, curErr, oldErr := load.LoadPair(ctx, p[1], p[0], lo)
		if curErr != nil || oldErr != nil {
			t.Fatal(curErr, oldErr)
		}
		cur2, err := load.Load(ctx, p[1], lo)
		if err != nil {
			t.Fatal(err)
		}
		old2, err := load.Load(ctx, p[0], lo)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range cur.Files {
			if of := old.File(f.Path); of != nil && of.Desc == f.Desc {
				reused++
			}
			if cur2.File(f.Path).Desc == f.Desc {
				t.Fatalf("%s: separate loads share a descriptor", f.Path)
			}
		}
		for _, use := range [][]string{{ruleset.CategoryFILE}, {ruleset.CategoryPACKAGE}, {ruleset.CategoryWIREJSON}, {ruleset.CategoryWIRE}, {ruleset.CategoryADR044}} {
			for _, compat := range []bool{false, true} {
				opts := Options{Use: use, BufCompat: compat, BufNames: compat}
				a, err := Breaking(old, cur, opts)
				if err != nil {
					t.Fatal(err)
				}
				b, err := Breaking(old2, cur2, opts)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(a, b) {
					t.Errorf("%s -> %s %v compat=%v: LoadPair gives\n%v\nseparate loads give\n%v", p[0], p[1], use, compat, a, b)
				}
			}
		}
	}
	if reused == 0 {
		t.Error("LoadPair reused no file")
	}
}

// TestLoadPairImportPaths checks that a file importing from an -I
// directory is compiled anew (its import is a new descriptor in each
// compilation), and that the pair still links and checks.
func TestLoadPairImportPaths(t *testing.T) {
	dir := testutil.TempDir(t)
	writeTree(t, dir, map[string]string{
		"inc/dep/dep.proto": "syntax = \"proto3\";\npackage dep;\nmessage D { int32 x = 1; }\n",
		"old/a.proto":       "syntax = \"proto3\";\npackage a;\nimport \"dep/dep.proto\";\nmessage A { dep.D d = 1; }\n",
		"old/b.proto":       "syntax = \"proto3\";\npackage a;\nmessage B { int32 y = 1; }\n",
		"new/a.proto":       "syntax = \"proto3\";\npackage a;\nimport \"dep/dep.proto\";\nmessage A { dep.D d = 1; }\n",
		"new/b.proto":       "syntax = \"proto3\";\npackage a;\nmessage B { int64 y = 1; }\nmessage C {}\n",
	})
	cur, old, curErr, oldErr := load.LoadPair(context.Background(), "new", "old", load.LoadOptions{Dir: dir, ImportPaths: []string{filepath.Join(dir, "inc")}})
	if curErr != nil || oldErr != nil {
		t.Fatal(curErr, oldErr)
	}
	if cur.File("a.proto").Desc == old.File("a.proto").Desc {
		t.Error("a.proto, which imports from -I, was reused")
	}
	fs, err := Breaking(old, cur, Options{Use: []string{ruleset.CategoryFILE}})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Type != "FIELD_SAME_TYPE" {
		t.Errorf("findings %+v, want one FIELD_SAME_TYPE", fs)
	}
}
