//go:build sdk && linux

package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// bufModule is the buf the repository pins (the Makefile's BUF), which the
// SDKs' READMEs name for a kind's image: go run bufModule build -o image.binpb.
const bufModule = "github.com/bufbuild/buf/cmd/buf@v1.75.0"

// TestREADMEsNameTheBufThatRuns keeps the image command of the SDKs'
// READMEs one that works without buf installed, the one
// TestInstalledSDKsServeANewKind runs: a newcomer has the Go toolchain,
// not buf, and "buf build" alone fails with "command not found".
func TestREADMEsNameTheBufThatRuns(t *testing.T) {
	want := "    go run " + bufModule + " build -o image.binpb\n"
	for _, readme := range []string{"../python/README.md", "../node/README.md"} {
		b, err := os.ReadFile(readme)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not show the command that builds a kind's image, %q", readme, strings.TrimSpace(want))
		}
	}
}

// The new kind's test data: its module of .proto files and a plugin in
// each language, written as a user would against the installed SDKs.
const (
	thermostatDir    = "testdata/thermostat"
	thermostatCookie = "PLUGKIT_THERMOSTAT=thermostat"
)

// TestBufPinMatchesMakefile keeps bufModule the Makefile's pin.
func TestBufPinMatchesMakefile(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^BUF\s*:=\s*(\S+)$`).FindSubmatch(b)
	if m == nil || string(m[1]) != bufModule {
		t.Fatalf("the Makefile pins buf as %q; this test uses %s: make them equal", m, bufModule)
	}
}

// command runs name in dir with this process's environment plus env,
// within timeout, and returns its combined output; it fails the test,
// saying what ran, when the command fails.
func command(t *testing.T, dir string, timeout time.Duration, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// freshCopy copies the SDK directory src to dst as a fresh clone has it:
// without what installing or testing leaves in a checkout (node_modules,
// Python's caches and setuptools' build output).
func freshCopy(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && (name == "node_modules" || name == "__pycache__" || name == "build" || strings.HasSuffix(name, ".egg-info")) {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		return copyFile(p, target, 0o644)
	})
	if err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
}

func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}

// TestInstalledSDKsServeANewKind is a newcomer's path for a kind of their
// own in Python and Node: the kind's image made with buf build, each SDK
// installed by its package name from a fresh copy of the sources (pip into
// a venv, npm from its npm pack tarball into a project of the test's), a
// plugin of each that imports the SDK by name and reads the image from a
// sub-directory beside it, listed by plugkit plugins list (the image not
// shown as an unusable plugin) and called through plugkit call, unary and
// server stream, with the kind's error.
func TestInstalledSDKsServeANewKind(t *testing.T) {
	tmp := testutil.TempDir(t)
	clone := filepath.Join(tmp, "clone")
	for _, lang := range []string{"python", "node"} {
		freshCopy(t, filepath.Join("..", lang), filepath.Join(clone, "sdk", lang))
	}

	// The kind's image, as the READMEs say: buf build -o image.binpb. The
	// first run compiles buf (minutes on a cold cache).
	image := filepath.Join(tmp, "image.binpb")
	command(t, filepath.Join(thermostatDir, "proto"), 20*time.Minute, []string{"BUF_CACHE_DIR=" + filepath.Join(tmp, "buf-cache")},
		"go", "run", bufModule, "build", "-o", image)

	plugins := filepath.Join(tmp, "plugins")
	for _, d := range []string{filepath.Join(plugins, "descriptors"), filepath.Join(tmp, "node-project", "descriptors")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := copyFile(image, filepath.Join(d, "thermostat.binpb"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Python, as sdk/python/README.md says: pip install into a venv that
	// sees Debian's grpcio, protobuf, setuptools and wheel
	// (--no-build-isolation: pip builds the wheel with them, and nothing
	// comes from PyPI); pip's cache is the test's.
	venv := filepath.Join(tmp, "venv")
	command(t, tmp, time.Minute, nil, python, "-m", "venv", "--system-site-packages", venv)
	command(t, tmp, 5*time.Minute, []string{"PIP_CACHE_DIR=" + filepath.Join(tmp, "pip-cache")},
		filepath.Join(venv, "bin", "pip"), "install", "--no-build-isolation", filepath.Join(clone, "sdk", "python"))
	src, err := os.ReadFile(filepath.Join(thermostatDir, "plugin.py"))
	if err != nil {
		t.Fatal(err)
	}
	shebang, body, _ := strings.Cut(string(src), "\n")
	if shebang != "#!/usr/bin/python3" {
		t.Fatalf("plugin.py starts with %q; the test replaces #!/usr/bin/python3 by the venv's python", shebang)
	}
	if err := os.WriteFile(filepath.Join(plugins, "py-thermostat"), []byte("#!"+filepath.Join(venv, "bin", "python")+"\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}

	// Node, as sdk/node/README.md says: the npm pack tarball, installed
	// into the plugin's project (its package.json the test's).
	project := filepath.Join(tmp, "node-project")
	command(t, tmp, 5*time.Minute, nil, "npm", "pack", filepath.Join(clone, "sdk", "node"))
	if err := os.WriteFile(filepath.Join(project, "package.json"), []byte(`{"name": "thermostat-plugin", "private": true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	command(t, project, 10*time.Minute, nil, "npm", "install", "../plugkit-sdk-0.1.0.tgz")
	var installed struct {
		Name    string `json:"name"`
		Private bool   `json:"private"`
	}
	if b, err := os.ReadFile(filepath.Join(project, "node_modules", "@plugkit", "sdk", "package.json")); err != nil || json.Unmarshal(b, &installed) != nil || installed.Name != "@plugkit/sdk" || installed.Private {
		t.Fatalf("the installed package is %+v (%v); want @plugkit/sdk, not private (npm publish refuses a private package)", installed, err)
	}
	if err := copyFile(filepath.Join(thermostatDir, "plugin.js"), filepath.Join(project, "thermostat.js"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(project, "thermostat.js"), filepath.Join(plugins, "node-thermostat")); err != nil {
		t.Fatal(err)
	}

	list := command(t, tmp, 2*time.Minute, nil, plugkit, "plugins", "list", "--dir", plugins, "--names", "*", "--cookie", thermostatCookie)
	for file, name := range map[string]string{"py-thermostat": "example.com/pythermostat", "node-thermostat": "example.com/nodethermostat"} {
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^%s\s+1\.0\.0\s+thermostat\s+1\.0\s+-\s+%s$`, file, regexp.QuoteMeta(name)))
		if !row.MatchString(list) {
			t.Errorf("plugins list has no row %v:\n%s", row, list)
		}
	}
	if strings.Contains(list, "descriptors") || strings.Contains(list, "unusable") {
		t.Errorf("plugins list shows the image's sub-directory or an unusable file:\n%s", list)
	}

	for _, file := range []string{"py-thermostat", "node-thermostat"} {
		t.Run(file, func(t *testing.T) {
			bin := filepath.Join(plugins, file)
			call := func(method, req string) (string, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				out, err := exec.CommandContext(ctx, plugkit, "call", bin, "--cookie", thermostatCookie, "--compact", "thermostat.v1.Thermostat/"+method, req).CombinedOutput()
				return string(out), err
			}
			out, err := call("Set", `{"celsius":21.5}`)
			if err != nil || strings.TrimSpace(out) != `{"previousCelsius":20,"changedAt":"2023-11-14T22:13:20Z"}` {
				t.Errorf("Set: %v\n%s\nwant the previous 20 °C and the change's time", err, out)
			}
			out, err = call("Set", `{"celsius":99}`)
			if err == nil || !strings.Contains(out, "InvalidArgument") || !strings.Contains(out, "99 °C is above 40 °C") {
				t.Errorf("Set above 40 °C: %v\n%s\nwant InvalidArgument and the plugin's message", err, out)
			}
			out, err = call("Readings", `{"count":3}`)
			want := "{\"seq\":1,\"celsius\":20}\n{\"seq\":2,\"celsius\":20}\n{\"seq\":3,\"celsius\":20}"
			if err != nil || strings.TrimSpace(out) != want {
				t.Errorf("Readings: %v\n%s\nwant\n%s", err, out, want)
			}
		})
	}
}

// TestPythonSDKTestsLeaveNoTemporaryFiles runs the Python SDK's own tests
// with a temporary directory of their own, and fails if they fail or leave
// anything in it.
func TestPythonSDKTestsLeaveNoTemporaryFiles(t *testing.T) {
	tmp := testutil.TempDir(t)
	command(t, "..", 5*time.Minute, []string{"TMPDIR=" + tmp, "PYTHONDONTWRITEBYTECODE=1"}, python, "-m", "unittest", "discover", "-s", "python/tests", "-t", "python")
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if len(left) > 0 {
		t.Errorf("the Python SDK's tests left %s in their temporary directory", strings.Join(left, ", "))
	}
}
