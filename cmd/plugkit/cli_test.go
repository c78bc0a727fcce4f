package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestCLIConventions checks the conventions every subcommand shares.
func TestCLIConventions(t *testing.T) {
	runOut := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	if code, out, errs := runOut(); code != 2 || out != "" || !strings.Contains(errs, "usage: plugkit COMMAND") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q; want the usage on stderr and exit 2", code, out, errs)
	}
	if code, out, errs := runOut("frobnicate"); code != 2 || !strings.Contains(errs, `unknown command "frobnicate"`) || out != "" {
		t.Errorf("unknown command: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, errs := runOut("help", "frobnicate"); code != 2 || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Errorf("help of an unknown command: exit %d, stderr %q", code, errs)
	}
	for _, name := range []string{"inspect", "call", "plugins", "compat", "proto", "demo"} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := runOut(name, "--help")
			if code != 0 || errs != "" || !strings.Contains(out, "plugkit "+name) {
				t.Fatalf("%s --help: exit %d, stdout %q, stderr %q; want the usage on stdout and exit 0", name, code, out, errs)
			}
			hcode, hout, herrs := runOut("help", name)
			if hcode != code || hout != out || herrs != errs {
				t.Errorf("plugkit help %s differs from plugkit %s --help:\n%q\n%q", name, name, hout, out)
			}
			if name == "demo" {
				return // without arguments, the demo runs
			}
			code, out, errs = runOut(name)
			if code != 2 || out != "" || !strings.Contains(errs, "usage") {
				t.Errorf("%s without arguments: exit %d, stdout %q, stderr %q; want the usage on stderr and exit 2", name, code, out, errs)
			}
		})
	}
	if code, _, errs := runOut("plugins", "frob"); code != 2 || !strings.Contains(errs, `unknown subcommand "frob"`) {
		t.Errorf("plugins frob: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runOut("proto", "frob"); code != 2 || !strings.Contains(errs, `unknown subcommand "frob"`) {
		t.Errorf("proto frob: exit %d, stderr %q", code, errs)
	}
}

// TestLaunchNotABinary: inspect and call on a file that is not executable
// or on a directory say so, instead of "fork/exec ...: permission denied".
func TestLaunchNotABinary(t *testing.T) {
	testutil.NotOnWindows(t, "it checks the message for a file without the execute bit, which Windows does not have")
	dir := testutil.TempDir(t)
	file := filepath.Join(dir, "plugin")
	if err := os.WriteFile(file, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{{file, "is not executable (mode -rw-r--r--): chmod +x it"}, {dir, "is a directory, not a plugin binary"}} {
		for _, cmd := range []string{"inspect", "call"} {
			var stdout, stderr bytes.Buffer
			args := []string{cmd, tc.path, "--cookie", exampleCookie}
			if cmd == "call" {
				args = append(args, "a.B/C")
			}
			code := run(args, &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), "fork/exec") {
				t.Errorf("%s %s: exit %d, stderr %q; want %q", cmd, tc.path, code, stderr.String(), tc.want)
			}
		}
	}
}

// TestPluginTextIsEscaped: escape sequences a plugin writes (to clear the
// screen, or to forge a table row) and bidirectional controls (to show
// text in another order than it has, "fs\u202egpj.exe") come out of the
// CLI escaped.
func TestPluginTextIsEscaped(t *testing.T) {
	testutil.NotOnWindows(t, "its hostile plugin is a shell script")
	dir := testutil.TempDir(t)
	bin := filepath.Join(dir, "plugkit-hostile") // named as plugins are, so list runs it
	script := "#!/bin/sh\nprintf '\\033[2J\\033[Hclean\\r\\nmemory  9.9.9  objectstore  2.0  -  forged\\n\\302\\233 c1\\nfs\\342\\200\\256gpj.exe \\342\\201\\246isolate\\342\\201\\251 \\342\\200\\217rlm \\330\\234alm\\n' >&2\nexit 1\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"inspect", bin, "--cookie", exampleCookie},
		{"plugins", "list", "--dir", dir, "--cookie", exampleCookie},
		{"plugins", "describe", bin, "--cookie", exampleCookie},
	} {
		var stdout, stderr bytes.Buffer
		run(args, &stdout, &stderr)
		all := stdout.String() + stderr.String()
		if strings.ContainsAny(all, "\x1b\r\u009b\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c") {
			t.Errorf("%v printed raw control characters: %q", args, all)
		}
		if !strings.Contains(all, `\x1b[2J`) || !strings.Contains(all, `\u009b`) || !strings.Contains(all, `fs\u202egpj.exe \u2066isolate\u2069 \u200frlm \u061calm`) {
			t.Errorf("%v does not show the escaped sequences: %q", args, all)
		}
		for _, line := range strings.Split(all, "\n") {
			if strings.HasPrefix(line, "memory") {
				t.Errorf("%v: a plugin forged a line of its own: %q", args, line)
			}
		}
	}
}

// TestInterruptHandlerOnlyWherePluginsRun: every command that may start
// plugins gets the interrupt handler that closes them; "proto" and
// "version", which start none, do not (see
// TestProtoInstallsNoInterruptHandler).
func TestInterruptHandlerOnlyWherePluginsRun(t *testing.T) {
	for name := range commands {
		if got, want := handlesInterrupts([]string{name, "x"}), name != "proto" && name != "version"; got != want {
			t.Errorf("plugkit %s: interrupt handler %v, want %v", name, got, want)
		}
	}
	for _, args := range [][]string{nil, {"help", "proto"}, {"frobnicate"}, {"--help"}} {
		if !handlesInterrupts(args) {
			t.Errorf("plugkit %q: no interrupt handler, want the default one", args)
		}
	}
}
