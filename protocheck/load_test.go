package protocheck

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/protocheck/load"
)

func TestLoadBadInput(t *testing.T) {
	ctx := context.Background()
	dir := testutil.TempDir(t)
	writeTree(t, filepath.Join(dir, "bad"), map[string]string{"a.proto": "syntax = \"proto3\";\npackage a;\nmessage M {\n  int32 a = ;\n}\n"})
	writeTree(t, filepath.Join(dir, "imp"), map[string]string{"a.proto": "syntax = \"proto3\";\npackage a;\nimport \"missing/dep.proto\";\nmessage M {}\n"})
	writeTree(t, filepath.Join(dir, "empty"), map[string]string{"README": "no protos"})

	_, err := load.Load(ctx, filepath.Join(dir, "bad"), load.LoadOptions{})
	var ce *load.CompileError
	if !errors.As(err, &ce) || len(ce.Problems) == 0 || !regexp.MustCompile(`bad/a\.proto:4:13: `).MatchString(ce.Problems[0].String()) {
		t.Errorf("unparsable proto: want a CompileError with file:line:col, got %v", err)
	}
	_, err = load.Load(ctx, filepath.Join(dir, "imp"), load.LoadOptions{})
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "imp/a.proto:3:1:") || !strings.Contains(err.Error(), "missing/dep.proto") {
		t.Errorf("missing import: want a positioned error naming the import, got %v", err)
	}
	// The import resolves with -I.
	writeTree(t, filepath.Join(dir, "inc"), map[string]string{"missing/dep.proto": "syntax = \"proto3\";\npackage dep;\n"})
	if _, err := load.Load(ctx, filepath.Join(dir, "imp"), load.LoadOptions{ImportPaths: []string{filepath.Join(dir, "inc")}}); err != nil {
		t.Errorf("with -I: %v", err)
	}
	if _, err := load.Load(ctx, filepath.Join(dir, "nope"), load.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing directory: %v", err)
	}
	if _, err := load.Load(ctx, filepath.Join(dir, "empty"), load.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "no .proto files") {
		t.Errorf("directory without protos: %v", err)
	}
	if _, err := load.Load(ctx, ".git#tag=v1,bogus=1", load.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "unknown option") {
		t.Errorf("bad git option: %v", err)
	}
}

func TestLoadGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	repo := testutil.TempDir(t)
	writeTree(t, repo, map[string]string{"proto/a/a.proto": "syntax = \"proto3\";\npackage a;\nmessage M { int32 x = 1; }\n", "other.proto": "syntax = \"proto3\";\n"})
	gitRun(t, repo, "init", "-q", "-b", "main")
	gitRun(t, repo, "add", ".")
	gitRun(t, repo, "commit", "-q", "-m", "one")
	gitRun(t, repo, "tag", "v1")
	writeTree(t, repo, map[string]string{"proto/a/a.proto": "syntax = \"proto3\";\npackage a;\nmessage M {}\n"})
	gitRun(t, repo, "commit", "-q", "-am", "two")

	for _, in := range []string{repo + "#tag=v1,subdir=proto", repo + "/.git#branch=main,subdir=proto", repo + "#ref=HEAD~1,subdir=proto"} {
		img, err := load.Load(ctx, in, load.LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if len(img.Files) != 1 || img.Files[0].Path != "a/a.proto" || img.Root != "" {
			t.Fatalf("%s: files %v root %q", in, img.Files, img.Root)
		}
	}
	old, _ := load.Load(ctx, repo+"#tag=v1,subdir=proto", load.LoadOptions{})
	cur, _ := load.Load(ctx, repo+"#branch=main,subdir=proto", load.LoadOptions{})
	got, err := Breaking(old, cur, Options{Use: []string{"FIELD_NO_DELETE"}})
	if err != nil || len(got) != 1 {
		t.Fatalf("tag against branch: %v %+v", err, got)
	}
	// Relative git inputs resolve against LoadOptions.Dir.
	if _, err := load.Load(ctx, ".git#tag=v1,subdir=proto", load.LoadOptions{Dir: repo}); err != nil {
		t.Errorf("relative .git input: %v", err)
	}
	if _, err := load.Load(ctx, repo+"#tag=v9", load.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "is not a commit, tag or branch") {
		t.Errorf("bad git ref: %v", err)
	}
	if _, err := load.Load(ctx, repo+"#tag=v1,subdir=nothere", load.LoadOptions{}); err == nil {
		t.Error("missing subdir: want an error")
	}
}

// TestLoadGitArchiveEntries: a git input reads the regular files of the
// commit's tree, executable ones included, under long and non-ASCII
// paths, and skips symbolic links as a directory input does.
func TestLoadGitArchiveEntries(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := testutil.TempDir(t)
	long := strings.Repeat("deep/", 25) + "l.proto" // beyond the 100 bytes of a ustar name
	writeTree(t, repo, map[string]string{
		"proto/a.proto":       "syntax = \"proto3\";\npackage a;\nmessage A {}\n",
		"proto/x.proto":       "syntax = \"proto3\";\npackage x;\nmessage X {}\n",
		"proto/é.proto":       "syntax = \"proto3\";\npackage e;\nmessage E {}\n",
		"proto/" + long:       "syntax = \"proto3\";\npackage l;\nmessage L {}\n",
		"outside/o.proto":     "syntax = \"proto3\";\npackage o;\n",
		"proto/sub/README.md": "not a proto\n",
	})
	if err := os.Chmod(filepath.Join(repo, "proto", "x.proto"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.proto", filepath.Join(repo, "proto", "link.proto")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	gitRun(t, repo, "init", "-q", "-b", "main")
	gitRun(t, repo, "add", ".")
	gitRun(t, repo, "commit", "-q", "-m", "one")

	img, err := load.Load(context.Background(), repo+"#branch=main,subdir=proto", load.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range img.Files {
		got = append(got, f.Path)
	}
	sort.Strings(got)
	want := []string{"a.proto", long, "x.proto", "é.proto"}
	if !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
}
