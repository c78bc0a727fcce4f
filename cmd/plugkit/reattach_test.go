package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestReattachDebugPlugin starts the memory plugin in debug mode, as a
// person does, and points inspect and call at it with --reattach: the
// bare JSON and the whole printed line both work, and the plugin is left
// running after each command.
func TestReattachDebugPlugin(t *testing.T) {
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
	if code := run([]string{"inspect", "--reattach", jsonText, "--json"}, &stdout, &stderr); code != 0 {
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
		code := run([]string{"call", "--reattach", reattach, "--compact", "objectstore.v1.ObjectStore/Exists", `{"key":"nothing"}`}, &stdout, &stderr)
		if code != 0 || stdout.String() != "{}\n" {
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
