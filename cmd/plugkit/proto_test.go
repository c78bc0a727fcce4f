package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

func writeProto(t *testing.T, path, src string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestProtoBreakingCLI(t *testing.T) {
	dir := testutil.TempDir(t)
	t.Chdir(dir)
	writeProto(t, "old/a.proto", "syntax = \"proto3\";\npackage a;\nmessage M {\n  int32 x = 1;\n  int32 y = 2;\n}\n")
	writeProto(t, "new/a.proto", "syntax = \"proto3\";\npackage a;\nmessage M {\n  int32 x = 1;\n}\n")
	writeProto(t, "same/a.proto", "syntax = \"proto3\";\npackage a;\nmessage M {\n  int32 x = 1;\n  int32 y = 2;\n}\n")

	code, out, errs := runCLI("proto", "breaking", "new", "--against", "old", "--error-format", "json")
	if code != 100 {
		t.Fatalf("exit %d, want 100; stderr %s", code, errs)
	}
	want := `{"path":"new/a.proto","start_line":3,"start_column":1,"end_line":5,"end_column":2,"type":"FIELD_NO_DELETE","message":"Previously present field \"2\" with name \"y\" on message \"a.M\" was deleted."}` + "\n"
	if out != want {
		t.Errorf("json output:\n%s\nwant\n%s", out, want)
	}
	var keys []string
	dec := json.NewDecoder(strings.NewReader(out))
	tok, _ := dec.Token()
	for dec.More() && tok != nil {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var v any
		_ = dec.Decode(&v)
	}
	if strings.Join(keys, ",") != "path,start_line,start_column,end_line,end_column,type,message" {
		t.Errorf("key order %v", keys)
	}

	if code, out, _ := runCLI("proto", "breaking", "new", "--against", "old"); code != 100 || out != "new/a.proto:3:1:Previously present field \"2\" with name \"y\" on message \"a.M\" was deleted.\n" {
		t.Errorf("text: %d %q", code, out)
	}
	if code, out, _ := runCLI("proto", "breaking", "--error-format=github-actions", "new", "--against", "old", "--buf-names"); code != 100 || !strings.HasPrefix(out, "::error file=new/a.proto,line=3,col=1,endLine=5,endColumn=2::") || !strings.Contains(out, `on message "M"`) {
		t.Errorf("github-actions: %d %q", code, out)
	}
	if code, out, errs := runCLI("proto", "breaking", "same", "--against", "old"); code != 0 || out != "" {
		t.Errorf("clean: %d %q %q", code, out, errs)
	}
	if code, _, _ := runCLI("proto", "breaking", "new", "--against", "old", "--except", "FIELD_NO_DELETE"); code != 0 {
		t.Errorf("--except: exit %d", code)
	}
	if code, _, errs := runCLI("proto", "breaking", "new", "--against", "old", "--use", "NOPE"); code != 1 || !strings.Contains(errs, "unknown rule or category") {
		t.Errorf("bad --use: %d %q", code, errs)
	}
	if code, _, errs := runCLI("proto", "breaking", "new", "--against", "missing"); code != 1 || !strings.Contains(errs, "does not exist") {
		t.Errorf("missing dir: %d %q", code, errs)
	}
	writeProto(t, "broken/a.proto", "syntax = \"proto3\";\nmessage {\n")
	if code, _, errs := runCLI("proto", "breaking", "broken", "--against", "old"); code != 1 || !strings.Contains(errs, "broken/a.proto:2:9:") {
		t.Errorf("unparsable: %d %q", code, errs)
	}
	// Informational findings alone exit 0.
	writeProto(t, "dep/a.proto", "syntax = \"proto3\";\npackage a;\nmessage M {\n  int32 x = 1;\n  int32 y = 2 [deprecated = true];\n}\n")
	if code, out, _ := runCLI("proto", "breaking", "dep", "--against", "same"); code != 0 || !strings.Contains(out, "was marked deprecated") {
		t.Errorf("deprecated: %d %q", code, out)
	}
}

func TestProtoBreakingGitCLI(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := testutil.TempDir(t)
	t.Chdir(dir)
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	writeProto(t, "proto/a.proto", "syntax = \"proto3\";\npackage a;\nservice S {\n  rpc R(M) returns (M);\n}\nmessage M {}\n")
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "v1")
	git("tag", "v1")
	writeProto(t, "proto/a.proto", "syntax = \"proto3\";\npackage a;\nservice S {\n}\nmessage M {}\n")
	code, out, errs := runCLI("proto", "breaking", "proto", "--against", ".git#tag=v1,subdir=proto")
	if code != 100 || !strings.Contains(out, `proto/a.proto:3:1:Previously present RPC "R" on service "a.S" was deleted.`) {
		t.Errorf("git against: %d %q %q", code, out, errs)
	}
	if code, _, errs := runCLI("proto", "breaking", "proto", "--against", ".git#tag=v7"); code != 1 || !strings.Contains(errs, "is not a commit, tag or branch") {
		t.Errorf("bad ref: %d %q", code, errs)
	}
}

func TestProtoRulesCLI(t *testing.T) {
	if code, out, _ := runCLI("proto", "rules", "--use", "WIRE"); code != 0 || strings.Count(out, "\n") != 15 {
		t.Errorf("rules: %d, %d lines\n%s", code, strings.Count(out, "\n"), out)
	}
}
