package protocheck

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/protocheck/report"
)

func breakingTypes(t *testing.T, old, new map[string]string, opts Options) []report.Finding {
	t.Helper()
	got, err := Breaking(mustImage(t, "old", old), mustImage(t, "new", new), opts)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestBeyondBuf covers each deliberate difference from buf in plugkit's
// default mode, next to what BufCompat reports for the same change.
func TestBeyondBuf(t *testing.T) {
	t.Run("field renamed", func(t *testing.T) {
		old := one(p3 + "message M {\n  int32 old_name = 1;\n}\n")
		new := one(p3 + "message M {\n  int32 new_name = 1;\n}\n")
		buf := breakingTypes(t, old, new, Options{Use: []string{"FILE"}, BufCompat: true})
		if len(buf) != 2 || buf[0].Type != "FIELD_SAME_JSON_NAME" || buf[1].Type != "FIELD_SAME_NAME" {
			t.Fatalf("buf-compatible: %+v", buf)
		}
		got := breakingTypes(t, old, new, Options{Use: []string{"FILE"}})
		if len(got) != 1 || got[0].Type != "FIELD_SAME_NAME" || !strings.Contains(got[0].Message, `was renamed from "old_name" to "new_name"`) || !strings.Contains(got[0].Hint, `"oldName" to "newName"`) {
			t.Fatalf("plugkit: %+v", got)
		}
	})
	t.Run("field renumbered", func(t *testing.T) {
		old := one(p3 + "message M {\n  int32 a = 1;\n  int32 b = 2;\n}\n")
		new := one(p3 + "message M {\n  int32 b = 1;\n}\n")
		buf := breakingTypes(t, old, new, Options{Use: []string{"FILE"}, BufCompat: true})
		if len(buf) != 3 { // FIELD_NO_DELETE(2), FIELD_SAME_JSON_NAME(1), FIELD_SAME_NAME(1)
			t.Fatalf("buf-compatible: %+v", buf)
		}
		got := breakingTypes(t, old, new, Options{Use: []string{"FILE"}})
		if len(got) != 1 || got[0].Type != "FIELD_NO_DELETE" || !strings.Contains(got[0].Message, `the field "b" now has number 1`) || !strings.Contains(got[0].Hint, `number 1 was "a" before`) {
			t.Fatalf("plugkit: %+v", got)
		}
	})
	t.Run("message moved", func(t *testing.T) {
		old := one(p3 + "message R {\n  message Caps { bool x = 1; }\n  Caps caps = 1;\n}\n")
		new := one(p3 + "message Caps { bool x = 1; bool y = 2; }\nmessage R {\n  Caps caps = 1;\n}\n")
		for _, cat := range []string{"WIRE", "WIRE_JSON"} {
			if buf := breakingTypes(t, old, new, Options{Use: []string{cat}, BufCompat: true}); len(buf) != 1 {
				t.Errorf("buf-compatible %s: %+v", cat, buf)
			}
			if got := breakingTypes(t, old, new, Options{Use: []string{cat}}); len(got) != 0 {
				t.Errorf("plugkit %s: %+v", cat, got)
			}
		}
		got := breakingTypes(t, old, new, Options{Use: []string{"FILE"}})
		if len(got) != 1 || got[0].Type != "MESSAGE_NO_DELETE" || !strings.Contains(got[0].Message, `moved to "a.Caps"`) || !strings.Contains(got[0].Hint, "a.R.caps") {
			t.Fatalf("plugkit FILE: %+v", got)
		}
	})
	t.Run("message type changed to a different message", func(t *testing.T) {
		old := one(p3 + "message A { bool x = 1; }\nmessage B { string x = 1; }\nmessage R {\n  A f = 1;\n}\n")
		new := one(p3 + "message A { bool x = 1; }\nmessage B { string x = 1; }\nmessage R {\n  B f = 1;\n}\n")
		if got := breakingTypes(t, old, new, Options{Use: []string{"WIRE"}}); len(got) != 1 || got[0].Type != "FIELD_WIRE_COMPATIBLE_TYPE" {
			t.Fatalf("plugkit WIRE: %+v", got)
		}
	})
	t.Run("package enum deleted", func(t *testing.T) {
		old := one(p3 + "enum E { E_UNSPECIFIED = 0; }\nmessage M {}\n")
		new := one(p3 + "message M {}\n")
		if buf := breakingTypes(t, old, new, Options{Use: []string{"PACKAGE_ENUM_NO_DELETE"}, BufCompat: true}); len(buf) != 0 {
			t.Errorf("buf-compatible: %+v", buf)
		}
		if got := breakingTypes(t, old, new, Options{Use: []string{"PACKAGE_ENUM_NO_DELETE"}}); len(got) != 1 {
			t.Errorf("plugkit: %+v", got)
		}
	})
}

func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestHistoryReleased covers MAJOR_VERSION_SAME_PACKAGE and
// RELEASED_FILE_CHANGED with a git baseline.
func TestHistoryReleased(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := testutil.TempDir(t)
	proto := filepath.Join(repo, "proto")
	writeTree(t, proto, map[string]string{
		"demo1.0.proto": "syntax = \"proto3\";\npackage demo1;\nmessage M { int32 a = 1; }\n",
		"demo1.1.proto": "syntax = \"proto3\";\npackage demo1;\nmessage M { int32 a = 1; int32 b = 2; }\n",
	})
	gitRun(t, repo, "init", "-q", "-b", "main")
	gitRun(t, repo, "add", ".")
	gitRun(t, repo, "commit", "-q", "-m", "v1")
	gitRun(t, repo, "tag", "v1.1")
	writeTree(t, proto, map[string]string{
		// Comment-only change: allowed.
		"demo1.0.proto": "// The first version.\nsyntax = \"proto3\";\npackage demo1;\n\nmessage M {\n  int32 a = 1; // a\n}\n",
		// Real change to a released file.
		"demo1.1.proto": "syntax = \"proto3\";\npackage demo1;\nmessage M { int32 a = 1; int64 b = 2; }\n",
		// New major with the old package.
		"demo2.0.proto": "syntax = \"proto3\";\npackage demo1;\nmessage M { int32 a = 1; }\n",
	})
	got, err := History(context.Background(), proto, HistoryOptions{Against: repo + "#tag=v1.1,subdir=proto"})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, f := range got {
		types = append(types, f.Path+":"+f.Type)
	}
	want := []string{"demo1.1.proto:RELEASED_FILE_CHANGED", "demo2.0.proto:MAJOR_VERSION_SAME_PACKAGE"}
	if strings.Join(types, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v\n%+v", types, want, got)
	}
	if got[0].StartLine != 3 || got[0].StartColumn != 26 {
		t.Errorf("RELEASED_FILE_CHANGED should point at the first changed token (3:26), got %d:%d", got[0].StartLine, got[0].StartColumn)
	}
}
