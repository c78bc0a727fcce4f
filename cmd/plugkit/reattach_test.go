package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// trustTCP is what a user adds to a TCP --reattach where plugkit cannot
// check who listens on the address: only Linux can (/proc). Elsewhere
// (Windows, where Wine has no AF_UNIX and every reattach is TCP, and
// macOS) the tests give --trust-tcp-listener as a user must; on Linux
// they give nothing and the check runs.
func trustTCP() []string {
	if runtime.GOOS == "linux" {
		return nil
	}
	return []string{"--trust-tcp-listener"}
}

// TestReattachDebugPlugin starts the memory plugin in debug mode, as a
// person does, and points inspect and call at it with --reattach: the
// bare JSON and the whole printed line both work, and the plugin is left
// running after each command.
func TestReattachDebugPlugin(t *testing.T) {
	t.Parallel()
	bin := memoryPlugin(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "PLUGKIT_DEBUG=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	value, ok := strings.CutPrefix(strings.TrimSpace(line), "PLUGKIT_REATTACH='")
	if !ok {
		t.Fatalf("debug mode printed %q", line)
	}
	jsonText := strings.TrimSuffix(value, "'")

	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"inspect", "--reattach", jsonText, "--json"}, trustTCP()...), &stdout, &stderr); code != 0 {
		t.Fatalf("inspect --reattach: exit %d: %s", code, stderr.String())
	}
	var got inspection
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if !got.Reattached || strings.TrimSuffix(got.Name, ".exe") != "memory" || got.Pid != cmd.Process.Pid || got.ProtocolVersion != 1 || got.TLS || !strings.Contains(strings.Join(got.Services, " "), "objectstore.v1.ObjectStore") {
		t.Errorf("inspect --reattach: %+v", got)
	}

	for _, reattach := range []string{line, jsonText} {
		stdout.Reset()
		stderr.Reset()
		code := run(append([]string{"call", "--reattach", reattach, "--compact", "objectstore.v1.ObjectStore/Exists", `{"key":"nothing"}`}, trustTCP()...), &stdout, &stderr)
		if code != 0 || stdout.String() != `{"exists":false}`+"\n" {
			t.Errorf("call --reattach %q: exit %d, stdout %q, stderr %q", reattach, code, stdout.String(), stderr.String())
		}
	}
	if !testutil.Running(cmd.Process.Pid) {
		t.Fatal("the plugin in debug mode is gone after the CLI closed it")
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", "--reattach", jsonText, "./plugins/memory"}, "takes the place of the plugin path"},
		{[]string{"inspect", "--reattach", "{not json"}, "--reattach: reattach configuration"},
		{[]string{"inspect", "--reattach", `{"a":{},"b":{}}`}, "names 2 plugins"},
		{[]string{"inspect", "--reattach", jsonText, "--versions", "7"}, "plugin supports [1], host supports [7]"},
		{[]string{"call", "--reattach", jsonText, "a/B", "{}", "extra"}, "no plugin path"},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := run(tc.args, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want an error saying %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestReattachTrustTCPListener: a TCP --reattach that plugkit cannot
// check (here nothing listens on the address; on systems other than Linux
// no TCP listener can be checked) is refused with an error naming
// --trust-tcp-listener, the CLI's way to opt in; given that flag, plugkit
// skips the check and goes on to connect (and fails only because nothing
// listens). The flag without --reattach is refused.
func TestReattachTrustTCPListener(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	reattach := `{"gone":{"Protocol":"grpc","ProtocolVersion":1,"Pid":0,"Addr":{"Network":"tcp","String":"` + addr + `"}}}`

	var stdout, stderr bytes.Buffer
	code := run([]string{"inspect", "--reattach", reattach, "--timeout", "5s"}, &stdout, &stderr)
	if code != 1 {
		t.Errorf("unchecked TCP reattach: exit %d, want 1", code)
	}
	for _, want := range []string{addr, "TrustTCPListener", "(plugkit: --trust-tcp-listener)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("unchecked TCP reattach: stderr lacks %q:\n%s", want, stderr.String())
		}
	}

	stdout.Reset()
	stderr.Reset()
	code = run([]string{"inspect", "--reattach", reattach, "--trust-tcp-listener", "--timeout", "5s"}, &stdout, &stderr)
	if code != 1 || strings.Contains(stderr.String(), "trust-tcp-listener") || strings.Contains(stderr.String(), "TrustTCPListener") || !strings.Contains(stderr.String(), addr) {
		t.Errorf("--trust-tcp-listener: exit %d, stderr %q; want exit 1 from the dial, without the listener check's refusal", code, stderr.String())
	}

	stderr.Reset()
	if code := run([]string{"inspect", "--trust-tcp-listener", "--cookie", "A=B", "./plugins/memory"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--trust-tcp-listener applies to --reattach only") {
		t.Errorf("--trust-tcp-listener without --reattach: exit %d, stderr %q", code, stderr.String())
	}
}
