package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/internal/testutil"
)

// memoryPlugin puts the example memory plugin into a temporary
// directory of the test's own.
func memoryPlugin(t *testing.T) string {
	t.Helper()
	return goBuild(t, testutil.TempDir(t), "memory", "../../examples/objectstore/plugins/memory")
}

func TestInspectJSON(t *testing.T) {
	t.Parallel()
	bin := memoryPlugin(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"inspect", bin, "--cookie", "PLUGKIT_EXAMPLE_PLUGIN=objectstore", "--versions", "1,2", "--json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, stdout.String())
	}
	if got["protocol_version"] != 1.0 || got["network"] != defaultNetwork() || got["protocol"] != "grpc" || got["tls"] != true {
		t.Errorf("fields: %v", got)
	}
	if pid, _ := got["pid"].(float64); pid <= 0 {
		t.Errorf("pid %v", got["pid"])
	}
	if ms, _ := got["start_ms"].(float64); ms <= 0 {
		t.Errorf("start_ms %v", got["start_ms"])
	}
	want := []any{"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection",
		"objectstore.v1.ObjectStore", "plugin.GRPCBroker", "plugin.GRPCController", "plugin.GRPCStdio", "plugkit.catalog.v1.Catalog"}
	if !reflect.DeepEqual(got["services"], want) {
		t.Errorf("services %v, want %v", got["services"], want)
	}
}

func TestInspectNoMTLS(t *testing.T) {
	t.Parallel()
	bin := memoryPlugin(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"inspect", "--no-mtls", "--json", "--cookie", "PLUGKIT_EXAMPLE_PLUGIN=objectstore", bin}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"tls":false`) {
		t.Errorf("want tls false: %s", stdout.String())
	}
}

func TestInspectFailures(t *testing.T) {
	t.Parallel()
	bin := memoryPlugin(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"inspect", bin, "--cookie", "PLUGKIT_EXAMPLE_PLUGIN=objectstore", "--versions", "5,6"}, 1, "plugin supports [1], host supports [5 6]"},
		{[]string{"inspect", bin, "--cookie", "PLUGKIT_EXAMPLE_PLUGIN=nope"}, 1, "rejected the magic cookie"},
		{[]string{"inspect", bin}, 2, "--cookie KEY=VALUE is required"},
		{[]string{"inspect", bin, "--cookie", "novalue"}, 2, "KEY=VALUE"},
		{[]string{"inspect", bin, "--cookie", "A=B", "--versions", "x"}, 2, "--versions"},
		{[]string{"inspect", "/nonexistent", "--cookie", "A=B"}, 1, "/nonexistent"},
		{[]string{"inspect"}, 2, "want one plugin path"},
		{[]string{"nosuchcommand"}, 2, "unknown command"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(tt.args, &stdout, &stderr)
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if code != tt.code || !strings.Contains(first, tt.want) {
			t.Errorf("%v: exit %d, first stderr line %q; want exit %d and %q", tt.args[1:], code, first, tt.code, tt.want)
		}
	}
}

// TestInspectNetRPCPlugin: inspect on a plugin whose handshake says netrpc
// prints why plugkit refuses it and what to do (handshake.ErrNetRPC's
// text), not only the line and "protocol: netrpc".
func TestInspectNetRPCPlugin(t *testing.T) {
	testutil.NotOnWindows(t, "its net/rpc plugin is a shell script")
	bin := filepath.Join(testutil.TempDir(t), "netrpc")
	script := "#!/bin/sh\necho '1|1|unix|/tmp/x|netrpc'\nexec sleep 30\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"inspect", bin, "--cookie", exampleCookie, "--timeout", "10s"}, &stdout, &stderr)
	errs := stderr.String()
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr %q", code, errs)
	}
	for _, want := range []string{`"1|1|unix|/tmp/x|netrpc"`, "protocol: netrpc", handshake.ErrNetRPC.Error()} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

// defaultNetwork is the network plugins listen on unless told otherwise:
// unix sockets, but loopback TCP on Windows.
func defaultNetwork() string {
	if osdep.UnixSockets {
		return "unix"
	}
	return "tcp"
}
