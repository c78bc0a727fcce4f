package plugin_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
)

// trustTCP is ReattachOptions.TrustTCPListener for this package's
// reattaches. Only Linux can check who listens on a TCP reattach's
// address (/proc); elsewhere (Windows, where Wine has no AF_UNIX and every
// reattach is TCP, and macOS) the host refuses a TCP reattach unless told
// to trust it, so the tests opt in there as a user must. On Linux they
// keep running the check.
const trustTCP = runtime.GOOS != "linux"

// debugEnv is the environment of a plugin a person starts in debug mode:
// no cookie, no host variables.
func debugEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, cookie.Key+"=") && !strings.HasPrefix(kv, "PLUGIN_") && !strings.HasPrefix(kv, "PLUGKIT_PLUGIN_TEST_ROLE=") {
			env = append(env, kv)
		}
	}
	return append(env, "PLUGKIT_PLUGIN_TEST_ROLE=plugin", plugin.EnvDebug+"=1")
}

// debugHost starts the plugin in debug mode, prints its pid and reattach
// line, and waits to be killed.
func debugHost() {
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = debugEnv()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		os.Exit(3)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	fmt.Printf("%d %s", cmd.Process.Pid, line)
	time.Sleep(time.Minute)
	os.Exit(0)
}

// reattachLine parses a PLUGKIT_REATTACH line and checks what it says.
func reattachLine(t *testing.T, line string, pid int) handshake.Reattach {
	t.Helper()
	if !strings.HasPrefix(line, plugin.EnvReattach+"='{") || !strings.HasSuffix(line, "}'\n") {
		t.Fatalf("debug mode printed %q: want one line PLUGKIT_REATTACH='{...}'", line)
	}
	rcs, err := host.ParseReattachLine(line)
	if err != nil {
		t.Fatal(err)
	}
	name, rc, err := host.OnlyReattach(rcs)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	if name != filepath.Base(exe) {
		t.Errorf("reattach name %q: want the executable's base name %q", name, filepath.Base(exe))
	}
	wantNet := defaultNetwork()
	if rc.Protocol != "grpc" || rc.ProtocolVersion != 2 || rc.Pid != pid || !rc.Test || rc.Addr.Network != wantNet || rc.Addr.String == "" {
		t.Errorf("reattach configuration %+v: want grpc, version 2 (the highest), pid %d, Test, a %s address", rc, pid, wantNet)
	}
	return rc
}

func checkV2(t *testing.T, c *host.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := objectstorev1.NewObjectStoreClient(c.Conn()).Exists(ctx, &objectstorev1.ExistsRequest{Key: "v2"})
	if err != nil || !resp.GetExists() {
		t.Fatalf("call through the reattached connection: %v %v", resp, err)
	}
}

// TestDebugMode starts a plugin the way a person does under a debugger
// (PLUGKIT_DEBUG=1, no cookie, no host), reattaches to it from the line it
// printed, checks that a host's Close leaves it running for the next
// host, and that an interrupt stops it with status 0.
func TestDebugMode(t *testing.T) {
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(debugEnv(), "GORACE=atexit_sleep_ms=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the reattach line: %v (stderr: %s)", err, stderr.String())
	}
	rc := reattachLine(t, line, cmd.Process.Pid)

	for i := range 2 {
		c, err := host.Reattach(ctx, rc, host.Options{Versions: []int{1, 2}}, host.ReattachOptions{TrustTCPListener: trustTCP})
		if err != nil {
			t.Fatalf("reattach %d: %v", i+1, err)
		}
		checkV2(t, c)
		if err := c.Close(); err != nil {
			t.Fatalf("Close %d: %v", i+1, err)
		}
		if !testutil.Running(cmd.Process.Pid) {
			t.Fatalf("the plugin exited when host %d closed its client: debug mode must keep serving", i+1)
		}
	}

	// Windows has no interrupt to send to another process (os.Interrupt
	// is a console's Ctrl+C there): the plugin is killed instead.
	interrupted := cmd.Process.Signal(os.Interrupt) == nil
	if !interrupted {
		cmd.Process.Kill()
	}
	waited := make(chan error, 1)
	go func() {
		io.Copy(io.Discard, br)
		waited <- cmd.Wait()
	}()
	select {
	case err := <-waited:
		if err != nil && interrupted {
			t.Fatalf("plugin after an interrupt: %v (stderr: %s)", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("plugin in debug mode still running 10 s after an interrupt")
	}
}

// TestDebugModeOutlivesItsParent kills the process that started a plugin
// in debug mode: the plugin keeps serving (a debugger or a shell may come
// and go), and a host with StopDebugPlugins stops it on Close.
func TestDebugModeOutlivesItsParent(t *testing.T) {
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	parent := exec.CommandContext(ctx, exe)
	parent.Env = append(os.Environ(), "PLUGKIT_PLUGIN_TEST_ROLE=debug-host", "GORACE=atexit_sleep_ms=0")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	text, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading from the debug host: %v", err)
	}
	pidText, line, _ := strings.Cut(text, " ")
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		t.Fatalf("debug host printed %q", text)
	}
	defer testutil.Kill(pid)
	rc := reattachLine(t, line, pid)
	parent.Process.Kill()
	parent.Wait()
	time.Sleep(time.Second) // ten times the interval at which a plugin looks for its parent
	if !testutil.Running(pid) {
		t.Fatal("plugin in debug mode exited when its parent died")
	}
	c, err := host.Reattach(ctx, rc, host.Options{Versions: []int{2}}, host.ReattachOptions{StopDebugPlugins: true, TrustTCPListener: trustTCP})
	if err != nil {
		t.Fatal(err)
	}
	checkV2(t, c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for testutil.Running(pid) {
		if time.Now().After(deadline) {
			t.Fatal("plugin in debug mode still running 5 s after Close with StopDebugPlugins")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDebugModeInProcess runs debug mode inside the test: Config.Debug,
// a custom announcement, the cookie not checked, and the variables only a
// launching host can honour ignored.
func TestDebugModeInProcess(t *testing.T) {
	pr, pw := io.Pipe()
	env := map[string]string{handshake.EnvClientCert: "not a certificate", handshake.EnvProtocolVersions: "1"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- plugin.RunIn(ctx, plugin.Config{
			Cookie:   cookie,
			Versions: map[int]plugin.Register{1: versionService("v1"), 2: versionService("v2")},
			Name:     "example.com/it's",
			Debug:    true,
			DebugAnnounce: func(w io.Writer, name string, r handshake.Reattach) error {
				text, err := handshake.ReattachJSON(name, r)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(w, "\tMY_VAR=%s\n", plugin.ShellQuote(text))
				return err
			},
		}, plugin.Harness{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, Handshake: pw})
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	rcs, err := host.ParseReattachLine(line)
	if err != nil {
		t.Fatalf("ParseReattachLine(%q): %v", line, err)
	}
	rc, ok := rcs["example.com/it's"]
	if !ok || rc.ProtocolVersion != 1 || rc.Pid != os.Getpid() {
		t.Fatalf("reattach %q: %+v: want example.com/it's at version 1 (PLUGIN_PROTOCOL_VERSIONS), pid %d", line, rcs, os.Getpid())
	}
	c, err := host.Reattach(ctx, rc, host.Options{Versions: []int{1}}, host.ReattachOptions{TrustTCPListener: trustTCP})
	if err != nil {
		t.Fatal(err)
	}
	if c.TLS() {
		t.Error("debug mode served TLS from PLUGIN_CLIENT_CERT: a reattaching host cannot know the certificate")
	}
	c.Close()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v after a host closed its client", err)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	pw.Close()
}

func TestDebugModeRejects(t *testing.T) {
	run := func(env map[string]string) error {
		return plugin.RunIn(context.Background(), plugin.Config{Cookie: cookie, Versions: map[int]plugin.Register{1: registerHealthOnly}},
			plugin.Harness{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	}
	if err := run(map[string]string{plugin.EnvDebug: "yes please"}); err == nil || !strings.Contains(err.Error(), "PLUGKIT_DEBUG=\"yes please\": set it to 1") {
		t.Errorf("Run with a bad PLUGKIT_DEBUG: %v", err)
	}
	err := run(map[string]string{plugin.EnvDebug: "0"})
	var ce *handshake.CookieError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "set PLUGKIT_DEBUG=1") {
		t.Errorf("Run by hand without the cookie: %v: want the cookie error, saying how to debug", err)
	}
}

func ExampleDebugLine() {
	plugin.DebugLine(os.Stdout, "example.com/memory", handshake.Reattach{
		Protocol:        "grpc",
		ProtocolVersion: 1,
		Pid:             4242,
		Test:            true,
		Addr:            handshake.ReattachAddr{Network: "unix", String: "/tmp/plugkit-1/plugin.sock"},
	})
	// Output:
	// PLUGKIT_REATTACH='{"example.com/memory":{"Protocol":"grpc","ProtocolVersion":1,"Pid":4242,"Test":true,"Addr":{"Network":"unix","String":"/tmp/plugkit-1/plugin.sock"}}}'
}
