package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/conformance"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// TestCommandRunsTheMatrix runs the matrix command of Command over a v1
// object store (this test binary, as the plugin) and checks its JSON, the
// exit status and its usage errors.
func TestCommandRunsTheMatrix(t *testing.T) {
	dir := testutil.TempDir(t)
	writeTestPlugin(t, filepath.Join(dir, "memory"))
	mx := conformance.Matrix{Kind: objectstore.Kind, Cookie: objectstore.Cookie, Hosts: objectstore.MatrixHosts(false)}
	run := func(args ...string) (int, string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var stdout, stderr bytes.Buffer
		code := conformance.Command(ctx, mx, "kv-matrix", args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, out, errOut := run("--dir", dir, "--json")
	var cells []conformance.Cell
	if err := json.Unmarshal([]byte(out), &cells); err != nil || code != 0 {
		t.Fatalf("exit %d, %v; stdout %s; stderr %s", code, err, out, errOut)
	}
	modes := map[int]conformance.Mode{}
	for _, c := range cells {
		modes[c.HostMajor] = c.Mode
	}
	if modes[2] != conformance.ModeAdapter || modes[1] != conformance.ModeDirect || len(cells) != 2 {
		t.Errorf("cells %+v: want v2 through the adapter and v1 direct", cells)
	}
	if code, _, errOut := run(); code != 2 || !strings.Contains(errOut, "kv-matrix: --dir is required") {
		t.Errorf("no --dir: exit %d, %q", code, errOut)
	}
	if code, _, _ := run("--dir", dir, "--json", "--markdown"); code != 2 {
		t.Errorf("--json with --markdown: exit %d, want 2", code)
	}
	if code, _, errOut := run("--dir", dir, "--releases", filepath.Join(dir, "missing.json")); code != 2 || !strings.Contains(errOut, "missing.json") {
		t.Errorf("missing --releases file: exit %d, %q", code, errOut)
	}
	if code, _, errOut := run("--dir", testutil.TempDir(t)); code != 1 || !strings.Contains(errOut, "no executable files") {
		t.Errorf("empty directory: exit %d, %q", code, errOut)
	}
}

// TestCommandFlagsOfTheKind: a flag the command defines is parsed with
// Command's own, named in the usage line, and changes the matrix it runs.
func TestCommandFlagsOfTheKind(t *testing.T) {
	dir := testutil.TempDir(t)
	writeTestPlugin(t, filepath.Join(dir, "memory"))
	mx := conformance.Matrix{Kind: objectstore.Kind, Cookie: objectstore.Cookie, Hosts: objectstore.MatrixHosts(false)}
	define := func(fs *flag.FlagSet) func(*conformance.Matrix) error {
		v1Only := fs.Bool("v1-only", false, "test against the v1 host only")
		v2Only := fs.Bool("v2-only", false, "test against the v2 host only")
		return func(mx *conformance.Matrix) error {
			if *v1Only && *v2Only {
				return errors.New("--v1-only and --v2-only exclude each other: give one")
			}
			if *v1Only {
				mx.Hosts = mx.Hosts[1:]
			}
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := conformance.CommandFlags(ctx, mx, "os-matrix", []string{"--dir", dir, "--json", "--v1-only"}, &stdout, &stderr, define)
	var cells []conformance.Cell
	if err := json.Unmarshal(stdout.Bytes(), &cells); err != nil || code != 0 {
		t.Fatalf("exit %d, %v; stdout %s; stderr %s", code, err, &stdout, &stderr)
	}
	if len(cells) != 1 || cells[0].HostMajor != 1 {
		t.Errorf("cells %+v: want the v1 host's only", cells)
	}
	stderr.Reset()
	if code := conformance.CommandFlags(ctx, mx, "os-matrix", nil, &stdout, &stderr, define); code != 2 || !strings.Contains(stderr.String(), "[--timeout D] [--v1-only]") {
		t.Errorf("no --dir: exit %d, %q; want 2 and a usage line naming --v1-only", code, &stderr)
	}
	// Values the command refuses: its error and the usage, before anything runs.
	stdout.Reset()
	stderr.Reset()
	if code := conformance.CommandFlags(ctx, mx, "os-matrix", []string{"--dir", dir, "--v1-only", "--v2-only"}, &stdout, &stderr, define); code != 2 ||
		!strings.HasPrefix(stderr.String(), "os-matrix: --v1-only and --v2-only exclude each other: give one\nusage: ") || stdout.Len() != 0 {
		t.Errorf("refused flags: exit %d, stdout %q, stderr %q; want 2, nothing run, the command's error and the usage", code, &stdout, &stderr)
	}
}

// writeTestPlugin makes path a plugin that is this test binary serving an
// object store v1: a shell script setting pluginEnv, or on Windows, which
// runs no scripts, a copy of the binary (path.exe) started with pluginEnv
// set in the environment the host passes on.
func writeTestPlugin(t *testing.T, path string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		script := fmt.Sprintf("#!/bin/sh\n%s=1 GORACE=atexit_sleep_ms=0 exec '%s' \"$@\"\n", pluginEnv, exe)
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".exe", data, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(pluginEnv, "1")
}

// TestCommandSaysWhatItDoesWhenSlow: a run that lasts over two seconds (a
// WebAssembly module's compile took 27-34 s on a loaded machine) says on
// stderr what it is doing, before the table. The binary's start here waits
// for that notice, with a generous deadline.
func TestCommandSaysWhatItDoesWhenSlow(t *testing.T) {
	dir := testutil.TempDir(t)
	writeTestPlugin(t, filepath.Join(dir, "memory"))
	var stderr testutil.Buffer
	const notice = "testing the plugins in "
	mx := conformance.WithNewManager(conformance.Matrix{Kind: objectstore.Kind, Cookie: objectstore.Cookie, Hosts: objectstore.MatrixHosts(false)},
		func(_ *manager.Finder, cfg manager.Config) *manager.Manager {
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !strings.Contains(stderr.String(), notice); {
				time.Sleep(20 * time.Millisecond)
			}
			return manager.New(cfg)
		})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout bytes.Buffer
	code := conformance.Command(ctx, mx, "kv-matrix", []string{"--dir", dir}, &stdout, &stderr)
	want := "kv-matrix: " + notice + dir + " against 2 host majors"
	if code != 0 || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d; stderr %q, want a line starting %q; stdout %s", code, stderr.String(), want, stdout.String())
	}
}
