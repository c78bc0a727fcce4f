package catalog_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
)

// describeEnv makes the test binary serve describeCatalog with catalog.Serve.
const describeEnv = "PLUGKIT_CATALOG_DESCRIBE_TEST"

var describeCookie = handshake.Cookie{Key: "PLUGKIT_CATALOG_TEST_COOKIE", Value: "v"}

func describeCatalog(t *testing.T) *catalog.Catalog {
	cat, err := catalog.New("1.2.3", catalog.Implement[objectstorev1.ObjectStoreServer]("objectstore", 1, 4, "example.com/mem", &objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: backend.NewMemory()}, "presign"))
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// runServe runs catalog.Serve in a child process with env added, and
// returns its stdout, stderr and exit code; a child still running after
// 20 s (it served) is killed and fails the test.
func runServe(t *testing.T, env ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := serveCommand(ctx, t, env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("catalog.Serve with %q did not exit: it served", env)
	case err != nil && !errors.As(err, &exit):
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// TestServeDescribesWithoutServing: asked with handshake.EnvDescribe, the
// right cookie and the catalog version, catalog.Serve writes exactly one
// describe line holding Describe's answer and exits 0; with a wrong cookie
// or without the catalog version it behaves as without the variable
// (the notice, or the version error, and exit 1), writing no description.
func TestServeDescribesWithoutServing(t *testing.T) {
	if os.Getenv(describeEnv) != "" {
		catalog.Serve(describeCookie, describeCatalog(t))
		return
	}
	describe := handshake.EnvDescribe + "=1"
	stdout, stderr, code := runServe(t, describeCookie.Key+"=v", handshake.EnvProtocolVersions+"=1,7", describe)
	line, ok := strings.CutSuffix(stdout, "\n")
	if code != 0 || !ok || strings.Contains(line, "\n") {
		t.Fatalf("describe: exit %d, stdout %q, stderr %q; want one line and exit 0", code, stdout, stderr)
	}
	payload, err := handshake.ParseDescribe(line)
	if err != nil {
		t.Fatal(err)
	}
	got := &catalogv1.DescribeResponse{}
	if err := proto.Unmarshal(payload, got); err != nil || !proto.Equal(got, describeCatalog(t).Describe()) {
		t.Errorf("described %v, %v; want %v", got, err, describeCatalog(t).Describe())
	}

	stdout, stderr, code = runServe(t, describeCookie.Key+"=other", handshake.EnvProtocolVersions+"=1", describe)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "this binary is a plugin") {
		t.Errorf("wrong cookie: exit %d, stdout %q, stderr %q; want exit 1, nothing on stdout, the notice on stderr", code, stdout, stderr)
	}
	// Without the catalog version on offer, it serves as it would
	// without the variable: its first line is a handshake line.
	first := firstLine(t, describeCookie.Key+"=v", handshake.EnvProtocolVersions+"=7", describe)
	if _, err := handshake.Parse(first); err != nil || handshake.IsDescribeLine(first) {
		t.Errorf("without the catalog version: first line %q (%v), want a handshake line", first, err)
	}
}

// firstLine starts catalog.Serve in a child process with env added and
// returns the first line it writes on stdout, then kills it.
func firstLine(t *testing.T, env ...string) string {
	t.Helper()
	cmd := serveCommand(context.Background(), t, env)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- strings.TrimSuffix(line, "\n")
	}()
	select {
	case line := <-lines:
		return line
	case <-time.After(20 * time.Second):
		t.Fatal("no line on stdout within 20 s")
		return ""
	}
}

// serveCommand is the test binary run to serve describeCatalog with
// catalog.Serve, with env added, killed when ctx ends.
func serveCommand(ctx context.Context, t *testing.T, env []string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestServeDescribesWithoutServing$")
	cmd.Env = append(os.Environ(), append([]string{describeEnv + "=1"}, env...)...)
	return cmd
}
