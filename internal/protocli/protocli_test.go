package protocli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// writeTree writes files (slash paths to content) below a new temporary
// directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := testutil.TempDir(t)
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run runs the proto command line and returns its exit status and outputs.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run("plugkit-proto", args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// Errors about the input given with --against say so, not "input"
// (issue 21).
func TestAgainstErrorsLabelled(t *testing.T) {
	good := writeTree(t, map[string]string{"a.proto": "syntax = \"proto3\";\npackage a;\nmessage M {}\n"})
	bad := writeTree(t, map[string]string{"a.proto": "syntax = \"proto3\";\npackage a;\nmessage M {\n"})
	missing := filepath.Join(good, "nope")
	cases := []struct {
		name, input, against, want string
	}{
		{"against missing", good, missing, `--against input ` + strconv.Quote(missing) + `: directory does not exist`},
		{"input missing", missing, good, `plugkit proto breaking: input ` + strconv.Quote(missing) + `: directory does not exist`},
		{"against does not compile", good, bad, `--against input ` + strconv.Quote(bad) + ` does not compile`},
		{"against git option", good, "#tag=v1,bogus=1", `--against git input "#tag=v1,bogus=1": unknown option`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := run(t, "breaking", c.input, "--against", c.against)
			if code != exitFailure || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, c.want)
			}
		})
	}
}

// An input whose imports are missing gets one line per unresolved import,
// each naming the import, and says to supply the files with -I DIR; with
// -I the input compiles (issue 21).
func TestMissingImportsSayHowToSupply(t *testing.T) {
	old := writeTree(t, map[string]string{"a.proto": "syntax = \"proto3\";\npackage a;\nmessage M {}\n"})
	cur := writeTree(t, map[string]string{
		"a.proto": "syntax = \"proto3\";\npackage a;\nimport \"dep/one.proto\";\nimport \"dep/two.proto\";\nmessage M {}\n",
		"b.proto": "syntax = \"proto3\";\npackage a;\nimport \"dep/one.proto\";\n",
	})
	code, _, stderr := run(t, "breaking", cur, "--against", old)
	if code != exitFailure {
		t.Fatalf("exit %d, want 1; stderr %s", code, stderr)
	}
	for _, want := range []string{
		"a.proto:3:1: import \"dep/one.proto\"",
		"a.proto:4:1: import \"dep/two.proto\"",
		"b.proto:3:1: import \"dep/one.proto\"",
		"-I DIR",
		"dep/one.proto, dep/two.proto at that path",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	inc := writeTree(t, map[string]string{
		"dep/one.proto": "syntax = \"proto3\";\npackage dep;\n",
		"dep/two.proto": "syntax = \"proto3\";\npackage dep;\n",
	})
	if code, out, stderr := run(t, "breaking", cur, "--against", old, "-I", inc, "--use", "FILE"); code != exitOK {
		t.Errorf("with -I: exit %d\n%s%s", code, out, stderr)
	}
}

// --config takes a buf.yaml file or its content; a name that is neither a
// readable file nor YAML or JSON says so (issue 21).
func TestConfigFlag(t *testing.T) {
	old := writeTree(t, map[string]string{"a.proto": "syntax = \"proto3\";\npackage a;\nmessage M { int32 x = 1; }\n"})
	cur := writeTree(t, map[string]string{"a.proto": "syntax = \"proto3\";\npackage a;\nmessage M { int64 x = 1; }\n"})
	code, out, stderr := run(t, "breaking", cur, "--against", old, "--config", `{"version":"v1","breaking":{"use":["FIELD_SAME_TYPE"]}}`)
	if code != exitFindings || !strings.Contains(out, `changed type from "int32" to "int64"`) {
		t.Errorf("inline JSON: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = run(t, "breaking", cur, "--against", old, "--config", `{"version":"v1","breaking":{"use":["FILE_NO_DELETE"]}}`)
	if code != exitOK || out != "" {
		t.Errorf("inline JSON selecting another rule: exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = run(t, "breaking", cur, "--against", old, "--config", filepath.Join(old, "nope.yaml"))
	if code != exitFailure || !strings.Contains(stderr, "nope.yaml") || !strings.Contains(stderr, "neither a readable file nor inline YAML or JSON") {
		t.Errorf("missing file: exit %d, stderr %s", code, stderr)
	}
}

// An unknown --error-format is refused before any work by both breaking
// and history, also when there would be no findings to write.
func TestUnknownErrorFormat(t *testing.T) {
	dir := writeTree(t, map[string]string{"demo1.0.proto": "syntax = \"proto3\";\npackage demo.v1;\nmessage M {}\n"})
	for _, args := range [][]string{
		{"history", dir, "--error-format", "bogus"},
		{"breaking", dir, "--against", dir, "--error-format", "bogus"},
	} {
		code, out, stderr := run(t, args...)
		if code != exitFailure || out != "" || !strings.Contains(stderr, `--error-format: unknown error format "bogus" (use text, json, github-actions or junit)`) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1 and the formats", args[0], code, out, stderr)
		}
	}
}
