//go:build sdk && linux

package sdktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/plugkit/plugkit/conformance"
	"github.com/plugkit/plugkit/examples/objectstore"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// python is the interpreter the Python examples' #! lines name: Debian's,
// with python3-grpcio and python3-protobuf. The Node examples run the node
// on PATH, with sdk/node's packages (npm ci).
const python = "/usr/bin/python3"

// A language's example plugins: the file in the plugin directory, the
// script it links to, and the implementation it serves.
type example struct {
	file, script, name, version string
	major, minor                int
	caps                        []string
}

var examples = []example{
	{"py-objectstore-v1", "../python/examples/objectstore_v1.py", "example.com/pymemory", "1.0.0", 1, 0, nil},
	{"py-objectstore-v2", "../python/examples/objectstore_v2.py", "example.com/pymemory2", "2.1.0", 2, 1, []string{objectstore.CapPresign}},
	{"node-objectstore-v1", "../node/examples/objectstore_v1.js", "example.com/nodememory", "1.0.0", 1, 0, nil},
	{"node-objectstore-v2", "../node/examples/objectstore_v2.js", "example.com/nodememory2", "2.1.0", 2, 1, []string{objectstore.CapPresign}},
}

// goPlugins are the Go example plugins built next to them.
var goPlugins = map[string]string{
	"memory": "../../examples/objectstore/plugins/memory",
	"fs":     "../../examples/objectstore/plugins/fs",
}

var (
	pluginDir string // Go and Python plugins together
	plugkit   string // the CLI
)

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdktest:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	if out, err := exec.Command(python, "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%s cannot import grpc and protobuf (%v: %s): on Debian, apt-get install python3-grpcio python3-protobuf", python, err, out)
	}
	if out, err := exec.Command("node", "-e", `if (+process.versions.node.split(".")[0] < 18) throw new Error("Node "+process.version+" is older than 18"); require("../node/node_modules/@grpc/grpc-js"); require("../node/node_modules/@grpc/proto-loader")`).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("node 18 or newer with sdk/node's packages is needed (%v: %s): install Node 18+ and run npm ci in sdk/node", err, out)
	}
	tmp, err := os.MkdirTemp("", "sdktest-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	pluginDir = filepath.Join(tmp, "plugins")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		return 0, err
	}
	plugkit = filepath.Join(tmp, "plugkit")
	builds := map[string]string{plugkit: "../../cmd/plugkit"}
	for name, pkg := range goPlugins {
		builds[filepath.Join(pluginDir, name)] = pkg
	}
	for out, pkg := range builds {
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	for _, ex := range examples {
		script, err := filepath.Abs(ex.script)
		if err != nil {
			return 0, err
		}
		if err := os.Symlink(script, filepath.Join(pluginDir, ex.file)); err != nil {
			return 0, err
		}
	}
	return m.Run(), nil
}

func newManager(t *testing.T) *manager.Manager {
	t.Helper()
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}, Host: host.Options{Logger: testutil.Logger(t)}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(pluginDir)}, Logger: testutil.Logger(t)})
	t.Cleanup(func() { m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPluginsListShowsSDKPluginsNextToGo: plugkit plugins list describes
// the Python and Node examples (over AutoMTLS, through Catalog/Describe) in
// the same table as the Go plugins.
func TestPluginsListShowsSDKPluginsNextToGo(t *testing.T) {
	out, err := exec.Command(plugkit, "plugins", "list", "--dir", pluginDir, "--names", "*", "--cookie", cookieFlag()).CombinedOutput()
	if err != nil {
		t.Fatalf("plugkit plugins list: %v\n%s", err, out)
	}
	for _, ex := range examples {
		caps := "-"
		if len(ex.caps) > 0 {
			caps = strings.Join(ex.caps, ",")
		}
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^%s\s+%s\s+objectstore\s+%d\.%d\s+%s\s+%s$`,
			regexp.QuoteMeta(ex.file), regexp.QuoteMeta(ex.version), ex.major, ex.minor, regexp.QuoteMeta(caps), regexp.QuoteMeta(ex.name)))
		if !row.Match(out) {
			t.Errorf("plugins list has no row %v for %s:\n%s", row, ex.file, out)
		}
	}
	for name := range goPlugins {
		if !regexp.MustCompile(`(?m)^` + name + `\s`).Match(out) {
			t.Errorf("plugins list lacks the Go plugin %s:\n%s", name, out)
		}
	}
}

// TestInspectAndCallThroughReflection: plugkit call, which learns the
// services through server reflection, calls each SDK's v2 example's
// Describe and a routed kind method, and inspect lists its services.
func TestInspectAndCallThroughReflection(t *testing.T) {
	for _, file := range []string{"py-objectstore-v2", "node-objectstore-v2"} {
		t.Run(file, func(t *testing.T) {
			inspectAndCall(t, filepath.Join(pluginDir, file), strings.Replace(file, "-objectstore-v2", "memory2", 1))
		})
	}
}

func inspectAndCall(t *testing.T, bin, short string) {
	out, err := exec.Command(plugkit, "call", bin, "--cookie", cookieFlag(), "--compact", "plugkit.catalog.v1.Catalog/Describe", "{}").CombinedOutput()
	if err != nil {
		t.Fatalf("plugkit call Describe: %v\n%s", err, out)
	}
	var d struct {
		PluginVersion string `json:"pluginVersion"`
		Kinds         []struct {
			Majors []struct {
				Service      string   `json:"service"`
				Capabilities []string `json:"capabilities"`
			} `json:"majors"`
		} `json:"kinds"`
	}
	if err := json.Unmarshal(out, &d); err != nil || d.PluginVersion != "2.1.0" || len(d.Kinds) != 1 || d.Kinds[0].Majors[0].Service != "objectstore.v2.ObjectStore" {
		t.Fatalf("Describe through plugkit call = %s (%v)", out, err)
	}
	out, err = exec.Command(plugkit, "call", bin, "--cookie", cookieFlag(), "--compact", "--name", "example.com/"+short,
		"objectstore.v2.ObjectStore/Stat", `{"key":"none"}`).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "NotFound") || !strings.Contains(string(out), `stat: no object \"none\"`) && !strings.Contains(string(out), `stat: no object "none"`) {
		t.Errorf("Stat of a missing object through plugkit call = %v:\n%s\nwant NotFound", err, out)
	}
	out, err = exec.Command(plugkit, "inspect", bin, "--cookie", cookieFlag()).CombinedOutput()
	if err != nil {
		t.Fatalf("plugkit inspect: %v\n%s", err, out)
	}
	for _, svc := range []string{"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "objectstore.v2.ObjectStore", "plugin.GRPCController", "plugin.GRPCStdio", "plugin.GRPCBroker", "plugkit.catalog.v1.Catalog"} {
		if !strings.Contains(string(out), "  "+svc+"\n") {
			t.Errorf("inspect does not list %s:\n%s", svc, out)
		}
	}
}

// TestDispenseAndSuites: the manager dispenses the SDKs' plugins as the
// v2 host does (v2 directly, v1 through the adapter) and as the v1 host
// does, and each client passes its major's conformance suite.
func TestDispenseAndSuites(t *testing.T) {
	m := newManager(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ex := range examples {
		t.Run(ex.file+"/v2 host", func(t *testing.T) {
			s, err := objectstore.Open(ctx, m, ex.name)
			if err != nil {
				t.Fatal(err)
			}
			info := s.Info()
			if info.Adapted != (ex.major == 1) || info.Major != ex.major || info.Minor != ex.minor || info.PluginVersion != ex.version {
				t.Errorf("dispensed %+v; want major %d.%d, adapted %v", info, ex.major, ex.minor, ex.major == 1)
			}
			objectstore.SuiteV2().Test(t, s)
		})
		if ex.major != 1 {
			continue
		}
		t.Run(ex.file+"/v1 host", func(t *testing.T) {
			s, err := objectstore.OpenV1(ctx, m, ex.name)
			if err != nil {
				t.Fatal(err)
			}
			objectstore.SuiteV1().Test(t, s)
		})
	}
	// A v2-only plugin is refused by a v1 host, saying why.
	for _, name := range []string{"example.com/pymemory2", "example.com/nodememory2"} {
		if _, err := objectstore.OpenV1(ctx, m, name); err == nil || !strings.Contains(err.Error(), "speaks objectstore 2.1") {
			t.Errorf("a v1 host dispensed the v2-only plugin %s: %v", name, err)
		}
	}
}

// TestMatrixWithGoPythonAndNode: the compatibility matrix over the shared
// directory has the SDKs' plugins' cells next to the Go plugins', each
// passing or, for v2.1 on the v1 host, incompatible.
func TestMatrixWithGoPythonAndNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mx := conformance.Matrix{Kind: objectstore.Kind, Cookie: objectstore.Cookie, Hosts: objectstore.MatrixHosts(false), Releases: objectstore.Releases(), Logger: testutil.Logger(t)}
	cells, err := mx.Run(ctx, pluginDir)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	conformance.WriteText(&text, cells)
	t.Logf("matrix:\n%s", text.String())
	if conformance.Failing(cells) {
		t.Errorf("failing cells in the matrix")
	}
	want := map[string]conformance.Mode{ // binary/host major -> mode
		"py-objectstore-v1/2": "adapter", "py-objectstore-v1/1": "direct",
		"py-objectstore-v2/2": "direct", "py-objectstore-v2/1": "incompatible",
		"node-objectstore-v1/2": "adapter", "node-objectstore-v1/1": "direct",
		"node-objectstore-v2/2": "direct", "node-objectstore-v2/1": "incompatible",
		"memory/2": "adapter", "memory/1": "direct",
	}
	got := map[string]conformance.Mode{}
	for _, c := range cells {
		got[fmt.Sprintf("%s/%d", filepath.Base(c.Binary), c.HostMajor)] = c.Mode
		if c.Mode != "incompatible" && c.Passed == 0 {
			t.Errorf("cell %s on v%d passed no case", c.Binary, c.HostMajor)
		}
	}
	for k, mode := range want {
		if got[k] != mode {
			t.Errorf("cell %s: mode %q, want %q", k, got[k], mode)
		}
	}
}

func cookieFlag() string { return objectstore.Cookie.Key + "=" + objectstore.Cookie.Value }

// run starts bin with env (and nothing else of this process's own) and
// returns its standard error and exit status.
func run(t *testing.T, bin string, env ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running %s: %v", bin, err)
	}
	return stderr.String(), cmd.ProcessState.ExitCode()
}

// TestCookieNoticeAsGo: run by hand (no cookie, or a wrong one), a Python
// or Node plugin prints the notice a Go plugin prints and exits 1 as it does.
func TestCookieNoticeAsGo(t *testing.T) {
	notice := (&handshake.CookieError{Key: objectstore.Cookie.Key}).Error()
	for _, env := range [][]string{nil, {objectstore.Cookie.Key + "=wrong"}} {
		goOut, goCode := run(t, filepath.Join(pluginDir, "memory"), env...)
		if goCode != 1 || !strings.HasPrefix(goOut, notice) {
			t.Fatalf("the Go plugin (env %q) exited %d with %q; the test expects the notice %q", env, goCode, goOut, notice)
		}
		for _, ex := range examples {
			out, code := run(t, filepath.Join(pluginDir, ex.file), env...)
			if code != 1 || out != notice+"\n" {
				t.Errorf("%s (env %q) exited %d with\n%q\nwant 1 with the Go plugin's notice\n%q", ex.file, env, code, out, notice+"\n")
			}
		}
	}
}

// TestNoMutualVersionAsGo: a host that offers no version the plugin
// speaks gets the same error from a Python or Node plugin as from a Go one, and
// the plugin's log record says the same.
func TestNoMutualVersionAsGo(t *testing.T) {
	start := func(bin string) (string, string) {
		var logs testutil.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := host.Start(ctx, host.Command{Path: filepath.Join(pluginDir, bin), Cookie: objectstore.Cookie}, host.Options{
			Versions: []int{2, 3}, Name: "plugin",
			Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		})
		if err == nil {
			c.Close()
			t.Fatalf("%s started with no version in common", bin)
		}
		var record string
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "no app protocol version in common") {
				var r map[string]any
				if json.Unmarshal([]byte(line), &r) == nil {
					f, _ := r["fields"].(map[string]any) // the plugin's own fields
					record = fmt.Sprintf("%v|%v|%v|%v|%v", r["level"], r["msg"], f["plugin_versions"], f["host_versions"], f["error"])
				}
			}
		}
		// The error ends with the plugin's last stderr lines, whose
		// timestamps differ from run to run: the record is compared alone.
		msg, _, _ := strings.Cut(err.Error(), "; its last stderr lines:")
		return msg, record
	}
	goErr, goRecord := start("memory")
	if !strings.Contains(goErr, "plugin supports [1], host supports [2 3]") || goRecord == "" {
		t.Fatalf("the Go plugin gave %q and the record %q; the test expects Go's version error and record", goErr, goRecord)
	}
	for _, ex := range examples {
		pyErr, pyRecord := start(ex.file)
		if pyErr != goErr {
			t.Errorf("%s: host error\n%s\nwant the Go plugin's\n%s", ex.file, pyErr, goErr)
		}
		if pyRecord != goRecord {
			t.Errorf("%s: log record\n%s\nwant the Go plugin's\n%s", ex.file, pyRecord, goRecord)
		}
	}
}

// TestHostDeathEndsPlugin: a host killed with SIGKILL takes its Python and
// Node plugins with it within a second, as Go plugins (the bound; the
// plugin polls every 100 ms; the test allows half a second more for a
// loaded machine).
func TestHostDeathEndsPlugin(t *testing.T) {
	for _, bin := range []string{"memory", "py-objectstore-v1", "node-objectstore-v1"} {
		t.Run(bin, func(t *testing.T) {
			dir := testutil.TempDir(t)
			out := filepath.Join(dir, "handshake")
			// The "host" is a shell that starts the plugin and waits.
			sh := exec.Command("/bin/sh", "-c", `"$0" >"$1" 2>/dev/null & echo $!; wait`, filepath.Join(pluginDir, bin), out)
			sh.Env = []string{"PATH=" + os.Getenv("PATH"), cookieFlag(), "PLUGIN_PROTOCOL_VERSIONS=1", "PLUGIN_UNIX_SOCKET_DIR=" + dir}
			stdout, err := sh.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := sh.Start(); err != nil {
				t.Fatal(err)
			}
			defer sh.Wait()
			var pid int
			if _, err := fmt.Fscan(stdout, &pid); err != nil {
				sh.Process.Kill()
				t.Fatal(err)
			}
			defer testutil.Kill(pid)
			deadline := time.Now().Add(20 * time.Second)
			for {
				b, _ := os.ReadFile(out)
				if bytes.HasSuffix(b, []byte("\n")) {
					break
				}
				if time.Now().After(deadline) {
					sh.Process.Kill()
					t.Fatalf("no handshake line from %s within 20s", bin)
				}
				time.Sleep(10 * time.Millisecond)
			}
			killed := time.Now()
			sh.Process.Kill()
			for testutil.Running(pid) {
				if time.Since(killed) > 1500*time.Millisecond {
					t.Fatalf("%s (pid %d) still runs %v after its host was killed", bin, pid, time.Since(killed).Round(time.Millisecond))
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Logf("%s exited %v after its host was killed", bin, time.Since(killed).Round(time.Millisecond))
		})
	}
}

// TestPluginOfADeadHostExits: a plugin that starts after its host died
// (PLUGKIT_HOST_PID names a process that no longer exists, and its parent
// is another) exits by itself, in Go, Python and Node alike: the watch
// compares with what the plugin found at its start, not after the
// handshake.
func TestPluginOfADeadHostExits(t *testing.T) {
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"memory", "py-objectstore-v1", "node-objectstore-v1"} {
		t.Run(bin, func(t *testing.T) {
			dir := testutil.TempDir(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// The plugin's parent is a shell that waits for it.
			sh := exec.CommandContext(ctx, "/bin/sh", "-c", `"$0" >/dev/null 2>&1`, filepath.Join(pluginDir, bin))
			sh.Env = []string{"PATH=" + os.Getenv("PATH"), cookieFlag(), "PLUGIN_PROTOCOL_VERSIONS=1", "PLUGIN_UNIX_SOCKET_DIR=" + dir, "PLUGKIT_HOST_PID=" + strconv.Itoa(gone.Process.Pid)}
			if err := sh.Run(); ctx.Err() != nil {
				t.Fatalf("%s still ran 30 s after it started with its host gone (%v)", bin, err)
			}
		})
	}
}

// TestLoopbackTCP: asked for TCP (PLUGKIT_NETWORK=tcp, a port range), the
// SDKs' plugins listen on loopback inside the range, with AutoMTLS, and
// stop when closed.
func TestLoopbackTCP(t *testing.T) {
	for _, file := range []string{"py-objectstore-v1", "node-objectstore-v1"} {
		t.Run(file, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := host.Start(ctx, host.Command{
				Path: filepath.Join(pluginDir, file), Cookie: objectstore.Cookie,
				Listen: host.Listen{Network: "tcp", MinPort: 23100, MaxPort: 23199},
			}, host.Options{Versions: []int{1}, Logger: testutil.Logger(t)})
			if err != nil {
				t.Fatal(err)
			}
			network, address := c.ReattachConfig().Addr.Network, c.ReattachConfig().Addr.String
			ip, port, _ := strings.Cut(address, ":")
			if p, _ := strconv.Atoi(port); network != "tcp" || !c.TLS() || ip != "127.0.0.1" || p < 23100 || p > 23199 {
				t.Errorf("the plugin listens on %s %s; want loopback TCP in 23100-23199 with TLS", network, address)
			}
			resp, err := objectstorev1.NewObjectStoreClient(c.Conn()).Exists(ctx, &objectstorev1.ExistsRequest{Key: "k"})
			if err != nil || resp.GetExists() {
				t.Errorf("Exists over TCP = %v, %v", resp, err)
			}
			if err := c.Close(); err != nil {
				t.Error(err)
			}
			if testutil.Running(c.Pid()) {
				t.Errorf("pid %d runs after Close", c.Pid())
			}
		})
	}
}

// TestStdioReachesTheHost: what a plugin prints after the handshake
// reaches the host over go-plugin's GRPCStdio stream (host.Output.SyncStdout), not
// the handshake pipe.
func TestStdioReachesTheHost(t *testing.T) {
	for _, file := range []string{"py-objectstore-v1", "node-objectstore-v1"} {
		t.Run(file, func(t *testing.T) {
			var stdout testutil.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := host.Start(ctx, host.Command{Path: filepath.Join(pluginDir, file), Cookie: objectstore.Cookie, Output: host.Output{SyncStdout: &stdout}},
				host.Options{Versions: []int{1}, Logger: testutil.Logger(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := objectstorev1.NewObjectStoreClient(c.Conn()).Init(ctx, &objectstorev1.InitRequest{Config: map[string]string{"a": "1", "b": "2"}}); err != nil {
				t.Fatal(err)
			}
			want := "objectstore: Init with 2 settings\n"
			for !strings.Contains(stdout.String(), want) {
				if ctx.Err() != nil {
					t.Fatalf("the host's Stdout got %q; want %q", stdout.String(), want)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestMalformedEnvironmentAsGo: a malformed value of a variable the host
// sets stops a Python, Node or Go plugin alike: status 1, nothing on
// standard output, and one line on standard error that names the variable
// and quotes its value, escaped (valid UTF-8, no control characters).
// PLUGKIT_MAX_INFLIGHT_BYTES is the SDKs' only: a hosted Go plugin has no
// in-flight budget (a Go plugin service reads it, see plugin.ServiceLimits).
func TestMalformedEnvironmentAsGo(t *testing.T) {
	cases := []struct {
		key, value, quoted string // quoted: the value as the line shows it ("" for a value not UTF-8)
		sdkOnly            bool
	}{
		{key: "PLUGIN_MIN_PORT", value: "abc", quoted: `"abc"`},
		{key: "PLUGIN_MAX_PORT", value: "70000", quoted: `"70000"`},
		{key: "PLUGIN_MIN_PORT", value: "\x1b]0;owned\x07", quoted: `"\x1b]0;owned\a"`},
		{key: "PLUGIN_MAX_PORT", value: "\xff\xfe"},
		{key: "PLUGIN_UNIX_SOCKET_GROUP", value: "no-such-group-plugkit", quoted: `"no-such-group-plugkit"`},
		{key: "PLUGIN_PROTOCOL_VERSIONS", value: "1,x\x1b[2J", quoted: `"1,x\x1b[2J"`},
		{key: "PLUGKIT_MAX_INFLIGHT_BYTES", value: "lots", quoted: `"lots"`, sdkOnly: true},
	}
	bins := []string{"memory"}
	for _, ex := range examples {
		bins = append(bins, ex.file)
	}
	for _, bin := range bins {
		for _, c := range cases {
			if c.sdkOnly && bin == "memory" {
				continue
			}
			t.Run(bin+"/"+c.key+"="+strconv.Quote(c.value), func(t *testing.T) {
				dir, err := os.MkdirTemp("", "env") // short: a unix socket's path is at most 103 bytes
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(dir) })
				out, code := run(t, filepath.Join(pluginDir, bin), objectstore.Cookie.Key+"="+objectstore.Cookie.Value,
					"PLUGIN_PROTOCOL_VERSIONS=1", "PLUGIN_UNIX_SOCKET_DIR="+dir, c.key+"="+c.value)
				line, rest, _ := strings.Cut(out, "\n")
				if code != 1 || rest != "" || !strings.Contains(line, c.key) || !utf8.ValidString(line) ||
					strings.ContainsFunc(line, unicode.IsControl) || !strings.Contains(line, c.quoted) {
					t.Errorf("exited %d with\n%q\nwant status 1 and one line naming %s with its value quoted as %s, no control characters", code, out, c.key, c.quoted)
				}
			})
		}
	}
}
