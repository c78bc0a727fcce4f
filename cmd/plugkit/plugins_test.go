package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestPluginsListReportsEveryBinary: with --names '*', every file is
// described and the unusable ones say why.
func TestPluginsListReportsEveryBinary(t *testing.T) {
	testutil.NotOnWindows(t, "its unusable binaries are a shell script and a file without the execute bit, which Windows does not have")
	dir := filepath.Dir(memoryPlugin(t))
	os.WriteFile(filepath.Join(dir, "broken"), []byte("#!/bin/sh\necho 'needs libfoo' >&2\nexit 1\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "README"), []byte("docs"), 0o644)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"plugins", "list", "--dir", dir, "--names", "*", "--json", "--cookie", exampleCookie}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d (want 0 even with bad binaries): %s", code, stderr.String())
	}
	var out struct {
		Binaries []binaryReport `json:"binaries"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	byName := map[string]binaryReport{}
	for _, b := range out.Binaries {
		byName[filepath.Base(b.Path)] = b
	}
	mem := byName["memory"]
	if !mem.OK || mem.PluginVersion != "1.3.0" || len(mem.Kinds) != 1 || mem.Kinds[0].Kind != "objectstore" ||
		mem.Kinds[0].Major != 1 || mem.Kinds[0].Names[0] != "example.com/memory" || len(mem.SHA256) != 64 {
		t.Errorf("memory: %+v", mem)
	}
	if b := byName["broken"]; b.OK || !strings.Contains(b.Error, "needs libfoo") {
		t.Errorf("broken: %+v", b)
	}
	if b := byName["README"]; b.OK || !strings.Contains(b.Error, "not executable") {
		t.Errorf("README: %+v", b)
	}

	stdout.Reset()
	if code := run([]string{"plugins", "list", "--dir", dir, "--names", "*", "--cookie", exampleCookie}, &stdout, &stderr); code != 0 {
		t.Fatalf("table: exit %d", code)
	}
	if !strings.Contains(stdout.String(), "memory  1.3.0    objectstore  1.0") || !strings.Contains(stdout.String(), "unusable:") {
		t.Errorf("table:\n%s", stdout.String())
	}

	stdout.Reset()
	if code := run([]string{"plugins", "describe", filepath.Join(dir, "memory"), "--json", "--cookie", exampleCookie}, &stdout, &stderr); code != 0 {
		t.Fatalf("describe: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"service":"objectstore.v1.ObjectStore"`) {
		t.Errorf("describe: %s", stdout.String())
	}
	if code := run([]string{"plugins", "describe", filepath.Join(dir, "broken"), "--cookie", exampleCookie}, &stdout, &stderr); code != 1 {
		t.Errorf("describe of a broken binary: exit %d, want 1", code)
	}
	if code := run([]string{"plugins", "list", "--cookie", exampleCookie}, &stdout, &stderr); code != 2 {
		t.Errorf("list without --dir: exit %d, want 2", code)
	}
}

// TestPluginsListExitCodes: plugins list exits 0 when some binary is
// usable, and 1 with a line on stderr naming the directories when none is
// or when they hold no binary at all (table and JSON alike).
func TestPluginsListExitCodes(t *testing.T) {
	good := filepath.Dir(memoryPlugin(t))
	bad, empty, empty2 := testutil.TempDir(t), testutil.TempDir(t), testutil.TempDir(t)
	os.WriteFile(filepath.Join(bad, "broken"), []byte("#!/bin/sh\necho 'needs libfoo' >&2\nexit 1\n"), 0o755)
	os.WriteFile(filepath.Join(bad, "README"), []byte("docs"), 0o644)
	for _, tc := range []struct {
		name string
		dirs []string
		code int
		want string // on stderr
	}{
		{"usable", []string{good}, 0, ""},
		{"usable among unusable", []string{bad, good}, 0, ""},
		{"none usable", []string{bad}, 1, "none of the 2 binaries in " + bad + " is usable"},
		{"no binaries", []string{empty}, 1, "no plugin binary in " + empty},
		{"no binaries in two dirs", []string{empty, empty2}, 1, "no plugin binary in " + empty + ", " + empty2},
	} {
		for _, asJSON := range []bool{false, true} {
			args := []string{"plugins", "list", "--names", "*", "--cookie", exampleCookie} // every executable, the broken ones too
			for _, d := range tc.dirs {
				args = append(args, "--dir", d)
			}
			if asJSON {
				args = append(args, "--json")
			}
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			if code != tc.code || (tc.want == "") != (stderr.Len() == 0) || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("%s (json %v): exit %d, stderr %q; want exit %d and %q", tc.name, asJSON, code, stderr.String(), tc.code, tc.want)
			}
			if asJSON && !json.Valid(stdout.Bytes()) {
				t.Errorf("%s: --json output is not JSON: %q", tc.name, stdout.String())
			}
			if tc.name == "none usable" && !asJSON && strings.Count(stdout.String(), "unusable:") != 2 {
				t.Errorf("none usable: the table does not give each binary's reason:\n%s", stdout.String())
			}
		}
	}
}

// exampleCookie is the example plugins' magic cookie as --cookie takes it.
var exampleCookie = objectstore.Cookie.Key + "=" + objectstore.Cookie.Value

func TestPluginsRequireCookie(t *testing.T) {
	dir := filepath.Dir(memoryPlugin(t))
	for _, args := range [][]string{{"plugins", "list", "--dir", dir}, {"plugins", "describe", filepath.Join(dir, "memory")}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--cookie KEY=VALUE is required") || stdout.Len() != 0 {
			t.Errorf("%v without --cookie: exit %d, stdout %q, stderr %q", args, code, stdout.String(), stderr.String())
		}
	}
}

// TestCompatWithoutCurrent: not knowing the installed release, compat
// names the release to pick and never says "not compatible" when one is.
func TestCompatWithoutCurrent(t *testing.T) {
	index := filepath.Join("..", "..", "examples", "objectstore", "releases.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"compat", "--index", index, "--plugin", "example.com/future", "--kind", "objectstore", "--majors", "1,2"}, &stdout, &stderr)
	if code != 0 || strings.Contains(stdout.String(), "not compatible") || !strings.Contains(stdout.String(), "v2.4.0") || !strings.Contains(stdout.String(), `version = "~> 2.4.0"`) {
		t.Errorf("exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	code = run([]string{"compat", "--index", index, "--plugin", "example.com/future", "--kind", "objectstore", "--majors", "1,2", "--json"}, &stdout, &stderr)
	if code != 0 || strings.Contains(stdout.String(), "not compatible") || !strings.Contains(stdout.String(), `"latest":"2.4.0"`) {
		t.Errorf("--json: exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
}

func TestCompat(t *testing.T) {
	index := filepath.Join("..", "..", "examples", "objectstore", "releases.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"compat", "--index", index, "--plugin", "example.com/future", "--kind", "objectstore", "--majors", "1,2", "--current", "3.0.0"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "Plugin version v2.4.0 is the latest compatible version") || !strings.Contains(stdout.String(), `version = "~> 2.4.0"`) {
		t.Errorf("exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	code = run([]string{"compat", "--index", index, "--plugin", "example.com/fs", "--kind", "objectstore", "--majors", "2", "--current", "2.1.0", "--json"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), `"current_compatible":true`) {
		t.Errorf("exit %d: %s", code, stdout.String())
	}
	stdout.Reset()
	code = run([]string{"compat", "--index", index, "--plugin", "example.com/memory", "--kind", "objectstore", "--majors", "5"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "No release") {
		t.Errorf("no compatible release: exit %d: %s", code, stdout.String())
	}
	if code := run([]string{"compat", "--index", "/nonexistent.json", "--plugin", "x", "--protocols", "5"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "nonexistent") {
		t.Errorf("missing index: exit %d: %s", code, stderr.String())
	}
}

// TestPluginsListRunsNoOrdinaryProgram: the attack of issue 39 point 1.
// plugins list --dir on a directory like /bin (programs that would write
// a file if run, none named as a plugin) starts none of them by default,
// exits 1 saying how plugins are recognised; the Go plugin beside them is
// found by its build info whatever its name, and one named plugkit-* runs.
func TestPluginsListRunsNoOrdinaryProgram(t *testing.T) {
	testutil.NotOnWindows(t, "its ordinary programs are shell scripts")
	dir, ran := testutil.TempDir(t), testutil.TempDir(t)
	for _, name := range []string{"ls", "rm", "python3", "cp"} {
		script := "#!/bin/sh\n: > '" + filepath.Join(ran, name) + "'\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"plugins", "list", "--dir", dir, "--cookie", "X=Y"}, &stdout, &stderr)
	if left, _ := os.ReadDir(ran); len(left) != 0 {
		t.Errorf("plugins list ran %d programs that are not plugins: %v", len(left), left)
	}
	if code != 1 || !strings.Contains(stderr.String(), "only files named plugkit-*") {
		t.Errorf("exit %d, stderr %q; want 1 and how plugins are recognised", code, stderr.String())
	}

	mem := memoryPlugin(t)
	if err := testutil.PlaceBinary(mem, filepath.Join(dir, "not-named-as-a-plugin")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "plugkit-script"), []byte("#!/bin/sh\n: > '"+filepath.Join(ran, "plugkit-script")+"'\n"), 0o755)
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"plugins", "list", "--dir", dir, "--cookie", exampleCookie}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "example.com/memory") {
		t.Errorf("the Go plugin by its build info: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	left, _ := os.ReadDir(ran)
	if len(left) != 1 || left[0].Name() != "plugkit-script" {
		t.Errorf("ran %v, want only plugkit-script", left)
	}
}
