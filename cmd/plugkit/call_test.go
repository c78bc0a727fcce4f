package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// tfCookie is Terraform's magic cookie (tfserve.Cookie, spelled out so
// that this test does not depend on the package under test elsewhere).
const tfCookie = "TF_PLUGIN_MAGIC_COOKIE=d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"

// TestCallGoPluginProvider calls a provider served by go-plugin itself
// (terraform-plugin-go's tf6server.Serve), through reflection only.
func TestCallGoPluginProvider(t *testing.T) {
	t.Parallel()
	bin := goBuild(t, testutil.TempDir(t), "terraform-provider-fixture", "./testdata/tf6provider")
	call := func(args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"call", bin, "--cookie", tfCookie, "--versions", "5,6"}, args...), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}

	t.Run("GetProviderSchema", func(t *testing.T) {
		stdout, stderr, code := call("tfplugin6.Provider/GetProviderSchema", "{}")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var resp struct {
			ResourceSchemas map[string]struct {
				Block struct {
					Attributes []struct {
						Name     string `json:"name"`
						Type     string `json:"type"`
						Required bool   `json:"required"`
					} `json:"attributes"`
				} `json:"block"`
			} `json:"resourceSchemas"`
		}
		if err := json.Unmarshal([]byte(stdout), &resp); err != nil {
			t.Fatalf("output is not one JSON object: %v\n%s", err, stdout)
		}
		w, ok := resp.ResourceSchemas["fixture_widget"]
		if !ok || len(w.Block.Attributes) != 2 {
			t.Fatalf("schema lacks fixture_widget and its two attributes:\n%s", stdout)
		}
		// Bytes fields are base64 in protobuf JSON: "number" is the type.
		for _, a := range w.Block.Attributes {
			if a.Name == "size" && (!a.Required || a.Type != `ImNvbnN0cmFpbnQgbnVtYmVyIg==` && a.Type != "Im51bWJlciI=") {
				t.Errorf("size attribute: %+v", a)
			}
		}
	})
	t.Run("compact", func(t *testing.T) {
		stdout, stderr, code := call("--compact", "tfplugin6.Provider/GetMetadata")
		if code != 0 || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, `"typeName":"fixture_widget"`) {
			t.Errorf("exit %d, stdout %q, stderr %s", code, stdout, stderr)
		}
	})
	t.Run("unknown method", func(t *testing.T) {
		_, stderr, code := call("tfplugin6.Provider/GetSchema")
		if code != 1 || !strings.Contains(stderr, `no method "GetSchema"`) || !strings.Contains(stderr, "GetProviderSchema") {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
	t.Run("unknown service", func(t *testing.T) {
		_, stderr, code := call("tfplugin5.Provider/GetSchema")
		if code != 1 || !strings.Contains(stderr, `no service "tfplugin5.Provider"`) || !strings.Contains(stderr, "tfplugin6.Provider") {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
	t.Run("bad JSON", func(t *testing.T) {
		_, stderr, code := call("tfplugin6.Provider/GetProviderSchema", `{"x":1}`)
		if code != 2 || !strings.Contains(stderr, `unknown field "x"`) || !strings.Contains(stderr, "tfplugin6.GetProviderSchema.Request") {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
	t.Run("list", func(t *testing.T) {
		stdout, stderr, code := call()
		if code != 2 || !strings.Contains(stdout, "tfplugin6.Provider/ApplyResourceChange\n") || !strings.Contains(stdout, "(server stream)") {
			t.Errorf("exit %d, stdout %s, stderr %s", code, stdout, stderr)
		}
	})
}

func TestCallUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"call"}, "want PLUGIN SERVICE/METHOD"},
		{[]string{"call", "/bin/true", "tfplugin6.Provider/X"}, "--cookie KEY=VALUE is required"},
		{[]string{"call", "/bin/true", "--cookie", tfCookie, "GetProviderSchema"}, "not a method name"},
		{[]string{"call", "/bin/true", "--cookie", tfCookie, "--versions", "x", "a.B/C"}, "--versions"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %s", tc.args, code, stderr.String())
		}
	}
}

// TestCallNameAndMetadata calls a plugin that serves two implementations
// of one service: --name and --metadata plugkit-name=... pick one, no name
// gets the catalog's error, and a bare service name lists its methods.
func TestCallNameAndMetadata(t *testing.T) {
	t.Parallel()
	bin := buildMultiname(t)
	call := func(args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"call", bin, "--cookie", exampleCookie}, args...), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	// "who" holds the implementation's own name: "a" is YQ==, "b" is Yg==.
	get := []string{"objectstore.v1.ObjectStore/Get", `{"key":"who"}`}
	if out, errs, code := call(append([]string{"--name", "b", "--compact"}, get...)...); code != 0 || out != `{"chunk":"Yg=="}`+"\n" {
		t.Errorf("--name b: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if out, errs, code := call(append([]string{"--metadata", "plugkit-name=a", "--compact"}, get...)...); code != 0 || out != `{"chunk":"YQ=="}`+"\n" {
		t.Errorf("--metadata plugkit-name=a: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, errs, code := call(get...); code != 1 || !strings.Contains(errs, "serves several implementations") || !strings.Contains(errs, "plugkit-name") {
		t.Errorf("no name: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := call(append([]string{"--metadata", "novalue"}, get...)...); code != 2 || !strings.Contains(errs, "want KEY=VALUE") {
		t.Errorf("bad --metadata: exit %d, stderr %q", code, errs)
	}
	out, errs, code := call("objectstore.v1.ObjectStore")
	if code != 0 || !strings.HasPrefix(out, "objectstore.v1.ObjectStore\n") || !strings.Contains(out, "objectstore.v1.ObjectStore/Get (server stream)") ||
		strings.Contains(out, "plugkit.catalog") || strings.Contains(errs, "no service") {
		t.Errorf("service alone: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, errs, code := call("objectstore.v9.Nothing"); code != 1 || !strings.Contains(errs, `no service "objectstore.v9.Nothing"`) && !strings.Contains(errs, `no service "objectstore.v9"`) {
		t.Errorf("unknown service: exit %d, stderr %q", code, errs)
	}
}

// TestInterruptClosesPlugins sends SIGINT and SIGTERM to a plugkit call
// whose call is in flight: the CLI closes the plugin it started (no
// orphan is left) and exits 130 or 143.
func TestInterruptClosesPlugins(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "it sends SIGINT and SIGTERM to the CLI; Windows has no signals to send to another process")
	cli, plug := goBuild(t, testutil.TempDir(t), "plugkit", "."), buildMultiname(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			pidFile := filepath.Join(testutil.TempDir(t), "pid")
			cmd := exec.Command(cli, "call", plug, "--cookie", exampleCookie, "--name", "a", "--rpc-timeout", "5m",
				"objectstore.v1.ObjectStore/Get", `{"key":"slow"}`)
			cmd.Env = append(os.Environ(), "MULTINAME_PIDFILE="+pidFile)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var pid int
			deadline := time.Now().Add(time.Minute)
			for pid == 0 && time.Now().Before(deadline) {
				if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
					pid, _ = strconv.Atoi(string(b))
				}
				time.Sleep(20 * time.Millisecond)
			}
			if pid == 0 {
				cmd.Process.Kill()
				t.Fatalf("the call never reached the plugin; stderr %s", stderr.String())
			}
			cmd.Process.Signal(tc.sig)
			select {
			case <-done:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatal("the CLI did not exit within a minute of the signal")
			}
			if got := cmd.ProcessState.ExitCode(); got != tc.code {
				t.Errorf("exit %d, want %d; stderr %s", got, tc.code, stderr.String())
			}
			if testutil.Exists(pid) {
				t.Errorf("plugin %d still runs after the CLI exited", pid)
			}
		})
	}
}

// buildMultiname builds the multi-name test plugin (testdata/multiname).
func buildMultiname(t *testing.T) string {
	t.Helper()
	return goBuild(t, testutil.TempDir(t), "multiname", "./testdata/multiname")
}

// TestCallSequence: several calls in one launch, from the command line
// and from --stdin, run in order against one plugin process (a Delete is
// seen by the Exists after it), each answer printed; the first failing
// call stops the sequence, is named on stderr, and the exit status is
// not 0.
func TestCallSequence(t *testing.T) {
	t.Parallel()
	bin := buildMultiname(t)
	// callIn is plugkit call with standard input in; call, with none.
	callIn := func(in string, args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := runCall(append([]string{bin, "--cookie", exampleCookie, "--compact"}, args...), strings.NewReader(in), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	call := func(args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"call", bin, "--cookie", exampleCookie, "--compact"}, args...), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	const (
		svc    = "objectstore.v1.ObjectStore/"
		who    = `{"key":"who"}`
		exists = `{"exists":true}` + "\n"
	)
	t.Run("arguments", func(t *testing.T) {
		out, errs, code := call("--name", "a", svc+"Exists", who, svc+"Delete", who, svc+"Exists", who, svc+"List")
		// A false field and an empty list are printed (the Exists after
		// the Delete, List), not left out.
		if want := exists + "{}\n" + `{"exists":false}` + "\n" + `{"keys":[]}` + "\n"; code != 0 || out != want {
			t.Errorf("exit %d, stdout %q, stderr %q; want %q", code, out, errs, want)
		}
		out, errs, code = call("--name", "b", svc+"Delete", who, svc+"Delete", who, svc+"Exists", who)
		if code != 1 || out != "{}\n" || !strings.Contains(errs, "call 2 of 3 ("+svc+"Delete)") || !strings.Contains(errs, "code = NotFound") {
			t.Errorf("failing second call: exit %d, stdout %q, stderr %q; want the first answer only and call 2 named", code, out, errs)
		}
		out, errs, code = call("--name", "a", svc+"Exists", who, svc+"Exists", `{"kee":"who"}`)
		if code != 2 || out != exists || !strings.Contains(errs, "call 2 of 2 ("+svc+"Exists)") || !strings.Contains(errs, `unknown field "kee"`) {
			t.Errorf("bad second request: exit %d, stdout %q, stderr %q", code, out, errs)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		out, errs, code := callIn(`{"method":"`+svc+`Get","request":`+who+`}`+"\n\n"+
			`{"method":"`+svc+`Delete","request":`+who+`}`+"\n"+
			`{"method":"`+svc+`Exists","request":`+who+`}`+"\n"+
			`{"method":"`+svc+`List"}`+"\n", "--name", "b", "--stdin")
		if want := `{"chunk":"Yg=="}` + "\n{}\n" + `{"exists":false}` + "\n" + `{"keys":[]}` + "\n"; code != 0 || out != want {
			t.Errorf("exit %d, stdout %q, stderr %q; want %q", code, out, errs, want)
		}
		out, errs, code = callIn(`{"method":"`+svc+`Exists","request":`+who+`}`+"\n"+
			`{"method":"`+svc+`Get","request":{"key":"none"}}`+"\n"+
			`{"method":"`+svc+`Delete","request":`+who+`}`+"\n", "--name", "a", "--stdin")
		if code != 1 || out != exists || !strings.Contains(errs, "call 2 (stdin line 2, "+svc+"Get)") || !strings.Contains(errs, "code = NotFound") {
			t.Errorf("failing second line: exit %d, stdout %q, stderr %q", code, out, errs)
		}
		out, errs, code = callIn(`{"method":"`+svc+`Exists","request":`+who+`}`+"\n"+`{"method":"`+svc+`Exists","request":{}`+"\n", "--name", "a", "--stdin")
		if code != 2 || out != exists || !strings.Contains(errs, "call 2 (stdin line 2)") || !strings.Contains(errs, `{"method":"SERVICE/METHOD","request":{...}}`) {
			t.Errorf("malformed second line: exit %d, stdout %q, stderr %q", code, out, errs)
		}
	})
	t.Run("usage", func(t *testing.T) {
		if _, errs, code := call("--stdin", svc+"List"); code != 2 || !strings.Contains(errs, "--stdin reads the calls from standard input") {
			t.Errorf("--stdin with a method: exit %d, stderr %q", code, errs)
		}
		if out, errs, code := call(svc+"Exists", who, "{}", svc+"List"); code != 2 || out != "" || !strings.Contains(errs, `"{}" is not a method name`) {
			t.Errorf("two requests after one method: exit %d, stdout %q, stderr %q; want no call made", code, out, errs)
		}
		if _, errs, code := callIn("{}", svc+"Exists", "-", svc+"Exists", "-"); code != 2 || !strings.Contains(errs, "only one request can come from standard input") {
			t.Errorf("two requests from stdin: exit %d, stderr %q", code, errs)
		}
	})
}

// TestPluginArgs: the words after -- reach the plugin that inspect and
// call launch as its arguments (a --help among them is the plugin's, not
// plugkit's); with --reattach, which launches nothing, they are refused.
func TestPluginArgs(t *testing.T) {
	bin := buildMultiname(t)
	argsFile := filepath.Join(testutil.TempDir(t), "args")
	t.Setenv("MULTINAME_ARGSFILE", argsFile)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", bin, "--cookie", exampleCookie, "--", "--config", "two words", "--help"}, "--config\ntwo words\n--help"},
		{[]string{"call", bin, "--cookie", exampleCookie, "--name", "a", "objectstore.v1.ObjectStore/List", "{}", "--", "-v", "x"}, "-v\nx"},
		{[]string{"call", bin, "--cookie", exampleCookie, "--name", "a", "objectstore.v1.ObjectStore/List"}, ""},
		{[]string{"call", bin, "--cookie", exampleCookie, "--name", "a", "objectstore.v1.ObjectStore/List", "--"}, ""},
	} {
		os.Remove(argsFile)
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 0 {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, stderr.String())
			continue
		}
		got, err := os.ReadFile(argsFile)
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: the plugin got arguments %q (%v), want %q", tc.args, got, err, tc.want)
		}
	}
	for _, cmd := range []string{"inspect", "call"} {
		var stdout, stderr bytes.Buffer
		code := run([]string{cmd, "--reattach", `{"x":{}}`, "--", "a"}, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "the arguments after -- go to a plugin that plugkit launches") {
			t.Errorf("%s --reattach with arguments: exit %d, stderr %q", cmd, code, stderr.String())
		}
	}
}
