package protocheck

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/protocheck/bufconfig"
	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/report"
)

// bufcfgFindings loads testdata/bufcfg/VERSION/{current,previous} and
// returns the findings of BreakingBuf as text, paths shown as in the input.
func bufcfgFindings(t *testing.T, version string, opts Options) string {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join("testdata", "bufcfg", version)
	cur, err := load.Load(ctx, "current", load.LoadOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	prev, err := load.Load(ctx, "previous", load.LoadOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if cur.Buf == nil || prev.Buf == nil {
		t.Fatalf("%s: no buf configuration found", version)
	}
	fs, err := BreakingBuf(prev, cur, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range fs {
		fs[i].Path = cur.DisplayPath(fs[i].Path)
	}
	report.Sort(fs)
	var buf bytes.Buffer
	if err := report.Write(&buf, report.FormatText, "", fs); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestBufConfigFixtures checks inputs with a v2 buf.yaml (two modules, one
// with its own breaking section) and with a v1 buf.work.yaml (two modules,
// one with a v1 buf.yaml) against what buf v1.75.0 printed for them
// (buf-expected.txt, from "buf breaking current --against previous" in the
// fixture's directory). Each fixture has files that do not compile in an
// excluded directory or outside every module, findings dropped by ignore,
// ignore_only and ignore_unstable_packages, rules left out by except, and
// findings that remain.
func TestBufConfigFixtures(t *testing.T) {
	for _, version := range []string{"v2", "v1"} {
		t.Run(version, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "bufcfg", version, "buf-expected.txt"))
			if err != nil {
				t.Fatal(err)
			}
			got := bufcfgFindings(t, version, Options{BufCompat: true, BufNames: true})
			if got != string(want) {
				t.Errorf("findings differ from buf's\ngot:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestBufConfigFlagsOverride shows that Options.Use and Except (the --use
// and --except flags) replace the file's use and except (--use alone
// drops the file's except too), while its ignores still apply.
func TestBufConfigFlagsOverride(t *testing.T) {
	// The v2 file says FILE except FIELD_SAME_JSON_NAME; --use
	// FIELD_SAME_JSON_NAME brings back the json_name change of Order.note.
	got := bufcfgFindings(t, "v2", Options{Use: []string{"FIELD_SAME_JSON_NAME"}, BufCompat: true, BufNames: true})
	if !strings.Contains(got, `"note" on message "Order" changed option "json_name"`) {
		t.Errorf("--use did not override the file's except:\n%s", got)
	}
	if strings.Contains(got, "FIELD_SAME_TYPE") || strings.Contains(got, "changed type") {
		t.Errorf("--use kept the file's other rules:\n%s", got)
	}
	// --except FIELD_SAME_TYPE replaces the file's except list.
	got = bufcfgFindings(t, "v2", Options{Except: []string{"FIELD_SAME_TYPE"}, BufCompat: true, BufNames: true})
	if strings.Contains(got, `changed type from "int32" to "int64"`) {
		t.Errorf("--except did not apply:\n%s", got)
	}
	if !strings.Contains(got, `changed option "json_name"`) {
		t.Errorf("--except did not replace the file's except:\n%s", got)
	}
	// Ignores stay: the legacy directory and the beta package are silent
	// whatever the rules.
	for _, use := range [][]string{{"FILE"}, {"WIRE"}, {"PACKAGE"}} {
		got = bufcfgFindings(t, "v2", Options{Use: use, BufCompat: true, BufNames: true})
		if strings.Contains(got, "legacy/") || strings.Contains(got, "v1beta1") {
			t.Errorf("--use %v: ignored files reported:\n%s", use, got)
		}
	}
}

// TestBufConfigLayout checks that module roots set import paths: the v2
// fixture's shop.proto imports "acme/shop/v1/cart.proto", which resolves
// only relative to the module root proto/.
func TestBufConfigLayout(t *testing.T) {
	img, err := load.Load(context.Background(), filepath.Join("testdata", "bufcfg", "v2", "current"), load.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range img.Files {
		paths = append(paths, f.Module+" "+f.Path)
	}
	want := "proto acme/labs/v1beta1/trial.proto|proto acme/shop/v1/cart.proto|proto acme/shop/v1/shop.proto|extra acme/tools/v1/tool.proto|proto legacy/old.proto"
	if got := strings.Join(paths, "|"); got != want {
		t.Errorf("files:\n%s\nwant:\n%s", got, want)
	}
	if got, want := img.DisplayPath("acme/shop/v1/cart.proto"), filepath.ToSlash(filepath.Join("testdata", "bufcfg", "v2", "current", "proto", "acme", "shop", "v1", "cart.proto")); got != want {
		t.Errorf("DisplayPath = %q, want %q", got, want)
	}
}

func TestBufConfigErrors(t *testing.T) {
	cases := map[string]struct {
		files map[string]string
		want  string
	}{
		"no version":      {map[string]string{"buf.yaml": "breaking:\n  use: [FILE]\n"}, "no version"},
		"bad version":     {map[string]string{"buf.yaml": "version: v3\n"}, `unknown version "v3"`},
		"bad yaml":        {map[string]string{"buf.yaml": "version: [v2\n"}, "buf.yaml"},
		"unknown rule":    {map[string]string{"buf.yaml": "version: v2\nbreaking:\n  use: [NO_SUCH_RULE]\n"}, `unknown rule or category "NO_SUCH_RULE"`},
		"escaping module": {map[string]string{"buf.yaml": "version: v2\nmodules:\n  - path: ../up\n"}, "must be a relative path inside the input"},
		"overlap":         {map[string]string{"buf.yaml": "version: v2\nmodules:\n  - path: a\n  - path: a/b\n"}, "must not overlap"},
		"work version":    {map[string]string{"buf.work.yaml": "version: v2\ndirectories: [a]\n"}, "only version v1"},
		"work module v2":  {map[string]string{"buf.work.yaml": "version: v1\ndirectories: [a]\n", "a/buf.yaml": "version: v2\n"}, "use v1"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			files := map[string][]byte{}
			for k, v := range c.files {
				files[k] = []byte(v)
			}
			_, err := bufconfig.Parse(files)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
	// A duplicate import path across modules is refused by name.
	dir := testutil.TempDir(t)
	writeTree(t, dir, map[string]string{
		"buf.yaml":    "version: v2\nmodules:\n  - path: a\n  - path: b\n",
		"a/x.proto":   "syntax = \"proto3\";\npackage x;\n",
		"b/x.proto":   "syntax = \"proto3\";\npackage x;\n",
		"c/off.proto": "outside every module",
	})
	if _, err := load.Load(context.Background(), dir, load.LoadOptions{}); err == nil || !strings.Contains(err.Error(), `file "x.proto" is in module "a" and in module "b"`) {
		t.Errorf("duplicate import path: err = %v", err)
	}
}

// TestBufConfigAgainstFile checks ignores that apply through the file an
// element came from: M moves out of the ignored proto/legacy and changes a
// field type, K is deleted from it, and a beta package is deleted. The
// wanted lines are what buf v1.75.0 printed for the same tree with each
// buf.yaml (buf breaking current --against previous).
func TestBufConfigAgainstFile(t *testing.T) {
	const (
		pkgDeleted = `<input>:1:1:Previously present package "p.x.v1beta1" was deleted.`
		typeChange = `current/proto/b.proto:5:3:Field "1" with name "x" on message "M" changed type from "int32" to "string".`
		kDeleted   = `current/proto/legacy/a.proto:1:1:Previously present message "K" was deleted from package "p.v1".`
	)
	for _, c := range []struct {
		breaking string
		want     []string
	}{
		{"  use: [PACKAGE]\n", []string{pkgDeleted, typeChange, kDeleted}},
		{"  use: [PACKAGE]\n  ignore: [proto/legacy]\n", []string{pkgDeleted}},
		{"  use: [PACKAGE]\n  ignore: [proto/legacy]\n  ignore_unstable_packages: true\n", nil},
		{"  use: [PACKAGE]\n  ignore_only:\n    FIELD_SAME_TYPE: [proto/legacy]\n", []string{pkgDeleted, kDeleted}},
	} {
		dir := testutil.TempDir(t)
		yaml := "version: v2\nmodules:\n  - path: proto\nbreaking:\n" + c.breaking
		writeTree(t, dir, map[string]string{
			"previous/buf.yaml":                yaml,
			"previous/proto/legacy/a.proto":    "syntax = \"proto3\";\npackage p.v1;\nmessage M {\n  int32 x = 1;\n}\nmessage K { int32 k = 1; }\n",
			"previous/proto/b.proto":           "syntax = \"proto3\";\npackage p.v1;\nmessage N {}\n",
			"previous/proto/x/v1beta1/b.proto": "syntax = \"proto3\";\npackage p.x.v1beta1;\nmessage B { int32 b = 1; }\n",
			"current/buf.yaml":                 yaml,
			"current/proto/legacy/a.proto":     "syntax = \"proto3\";\npackage p.v1;\n",
			"current/proto/b.proto":            "syntax = \"proto3\";\npackage p.v1;\nmessage N {}\nmessage M {\n  string x = 1;\n}\n",
		})
		ctx := context.Background()
		cur, old, curErr, oldErr := load.LoadPair(ctx, "current", "previous", load.LoadOptions{Dir: dir})
		if curErr != nil || oldErr != nil {
			t.Fatal(curErr, oldErr)
		}
		fs, err := BreakingBuf(old, cur, Options{BufCompat: true, BufNames: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range fs {
			fs[i].Path = cur.DisplayPath(fs[i].Path)
		}
		report.Sort(fs)
		var buf bytes.Buffer
		if err := report.Write(&buf, report.FormatText, "", fs); err != nil {
			t.Fatal(err)
		}
		want := strings.Join(c.want, "\n")
		if want != "" {
			want += "\n"
		}
		if buf.String() != want {
			t.Errorf("breaking:\n%sgot:\n%s\nwant:\n%s", c.breaking, buf.String(), want)
		}
	}
}

// TestBufConfigGit reads the v2 fixture's layout from a git input: the
// buf.yaml of the tagged commit sets AGAINST's modules, the working tree's
// sets INPUT's, and the findings are buf's (paths relative to the
// repository, which is the input).
func TestBufConfigGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	src := filepath.Join("testdata", "bufcfg", "v2")
	repo := testutil.TempDir(t)
	copyTree := func(from string) {
		t.Helper()
		files := map[string]string{}
		err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			rel, _ := filepath.Rel(from, p)
			files[filepath.ToSlash(rel)] = string(data)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		writeTree(t, repo, files)
	}
	copyTree(filepath.Join(src, "previous"))
	gitRun(t, repo, "init", "-q", "-b", "main")
	gitRun(t, repo, "add", ".")
	gitRun(t, repo, "commit", "-q", "-m", "previous")
	gitRun(t, repo, "tag", "v1")
	copyTree(filepath.Join(src, "current"))
	ctx := context.Background()
	cur, old, curErr, oldErr := load.LoadPair(ctx, ".", ".git#tag=v1", load.LoadOptions{Dir: repo})
	if curErr != nil || oldErr != nil {
		t.Fatal(curErr, oldErr)
	}
	if old.Buf == nil || len(old.Buf.Modules) != 2 {
		t.Fatalf("against's layout from git: %+v", old.Buf)
	}
	fs, err := BreakingBuf(old, cur, Options{BufCompat: true, BufNames: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range fs {
		fs[i].Path = cur.DisplayPath(fs[i].Path)
	}
	report.Sort(fs)
	var got bytes.Buffer
	if err := report.Write(&got, report.FormatText, "", fs); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(src, "buf-expected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.ReplaceAll(string(want), "current/", ""); got.String() != w {
		t.Errorf("got:\n%s\nwant:\n%s", got.String(), w)
	}
}
