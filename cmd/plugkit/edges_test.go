package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestVersion: "plugkit version" and "plugkit --version" print the
// module's version on stdout and exit 0.
func TestVersion(t *testing.T) {
	code, out, errs := runCLI("version")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "plugkit ") {
		t.Fatalf("plugkit version: exit %d, stdout %q, stderr %q; want the version on stdout and exit 0", code, out, errs)
	}
	code2, out2, errs2 := runCLI("--version")
	if code2 != 0 || out2 != out || errs2 != "" {
		t.Errorf("plugkit --version: exit %d, stdout %q, stderr %q; want what plugkit version prints, %q", code2, out2, errs2, out)
	}
}

// TestEveryCommandHelp: "plugkit CMD --help" prints CMD's usage on stdout
// and exits 0 for every command, and says nothing is unknown; a command of
// subcommands given an unknown one exits 2 with its usage.
func TestEveryCommandHelp(t *testing.T) {
	for name := range commands {
		t.Run(name, func(t *testing.T) {
			code, out, errs := runCLI(name, "--help")
			if code != 0 || errs != "" || !strings.Contains(out, "plugkit "+name) || strings.Contains(out, "unknown") {
				t.Errorf("%s --help: exit %d, stdout %q, stderr %q; want its usage on stdout and exit 0", name, code, out, errs)
			}
		})
	}
	for _, name := range []string{"release", "plugins"} {
		code, out, errs := runCLI(name, "frob")
		if code != 2 || out != "" || !strings.Contains(errs, `unknown subcommand "frob"`) || !strings.Contains(errs, "usage: plugkit "+name) {
			t.Errorf("%s frob: exit %d, stdout %q, stderr %q; want exit 2 and the usage on stderr", name, code, out, errs)
		}
	}
}

// TestPluginInCurrentDirectoryHint: a plugin named without ./ that is
// not in PATH but is in the current directory gets a hint, as a shell
// would not give one.
func TestPluginInCurrentDirectoryHint(t *testing.T) {
	testutil.NotOnWindows(t, "Windows looks up a program in the current directory before PATH")
	dir := testutil.TempDir(t)
	if err := os.WriteFile(filepath.Join(dir, "myplugin"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("PATH", testutil.TempDir(t))
	for _, cmd := range []string{"inspect", "call"} {
		args := []string{cmd, "myplugin", "--cookie", exampleCookie}
		if cmd == "call" {
			args = append(args, "a.B/C")
		}
		code, _, errs := runCLI(args...)
		if code != 1 || !strings.Contains(errs, "not in PATH") || !strings.Contains(errs, "did you mean ./myplugin?") {
			t.Errorf("%s myplugin: exit %d, stderr %q; want a hint naming ./myplugin", cmd, code, errs)
		}
	}
	code, _, errs := runCLI("inspect", "nosuchplugin", "--cookie", exampleCookie)
	if code != 1 || strings.Contains(errs, "did you mean") {
		t.Errorf("inspect of a name in neither PATH nor the directory: exit %d, stderr %q; want no hint", code, errs)
	}
}

// TestVersionLine covers the build information a binary may carry: a
// release's version, a build from a checkout with its commit, and one
// without version control information.
func TestVersionLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want []string
		not  []string
	}{
		{"release", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"}},
			[]string{"plugkit v0.3.0 (go1.26.0)"}, []string{"(devel)", "commit"}},
		{"checkout with a commit", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20261128035000-52f10fd0a1b2+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "52f10fd0a1b2"}, {Key: "vcs.time", Value: "2026-11-28T03:50:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			[]string{"plugkit v0.0.0-20261128035000-52f10fd0a1b2+dirty", "commit 52f10fd0a1b2 with uncommitted changes of 2026-11-28T03:50:00Z"}, []string{"buildvcs"}},
		{"devel with a commit", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}},
			[]string{"plugkit (devel) (commit abc)"}, []string{"uncommitted", "buildvcs"}},
		{"devel without version control", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			[]string{"plugkit (devel)", "-buildvcs=true"}, []string{"commit "}},
		{"no build information", nil, []string{"plugkit (unknown)"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := versionLine(tc.info)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("versionLine = %q, lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("versionLine = %q, has %q", got, n)
				}
			}
		})
	}
}
