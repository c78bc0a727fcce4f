package tfserve_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/tfserve"
)

// trustTCP is ReattachOptions.TrustTCPListener for this package's
// reattaches. Only Linux can check who listens on a TCP reattach's
// address (/proc); elsewhere (Windows, where Wine has no AF_UNIX and every
// reattach is TCP, and macOS) the host refuses a TCP reattach unless told
// to trust it, so the tests opt in there as a user must. On Linux they
// keep running the check.
const trustTCP = runtime.GOOS != "linux"

// TestDebug serves a provider in debug mode inside the test, checks that
// it announces itself as terraform-plugin-go's debug mode does (a
// sentence, a blank line, a tab-indented TF_REATTACH_PROVIDERS='...', a
// blank line), reattaches twice from that line and stops it through ctx.
func TestDebug(t *testing.T) {
	pr, pw := io.Pipe()
	cfg := tfserve.Config{
		Name:  "registry.terraform.io/plugkit/test",
		V6:    func() tfprotov6.ProviderServer { return testProvider{} },
		Debug: true,
	}
	// tfserve.Run is plugin.Run of cfg.PluginConfig; here with the
	// handshake through the pipe and no environment.
	pc, err := cfg.PluginConfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- plugin.RunIn(ctx, pc, plugin.Harness{LookupEnv: func(string) (string, bool) { return "", false }, Handshake: pw})
	}()
	br := bufio.NewReader(pr)
	var lines []string
	for range 4 {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", lines, err)
		}
		lines = append(lines, l)
	}
	go io.Copy(io.Discard, br)
	if !strings.HasPrefix(lines[0], "Provider registry.terraform.io/plugkit/test ") || !strings.Contains(lines[0], "TF_REATTACH_PROVIDERS") ||
		lines[1] != "\n" || !strings.HasPrefix(lines[2], "\tTF_REATTACH_PROVIDERS='{\"registry.terraform.io/plugkit/test\":{") || lines[3] != "\n" {
		t.Fatalf("debug announcement %q", lines)
	}
	rcs, err := host.ParseReattachLine(lines[2])
	if err != nil {
		t.Fatal(err)
	}
	rc := rcs["registry.terraform.io/plugkit/test"]
	if rc.ProtocolVersion != tfserve.Protocol6 || !rc.Test || rc.Pid != os.Getpid() || rc.Protocol != "grpc" {
		t.Fatalf("reattach configuration %+v: want protocol 6, Test, this process", rc)
	}
	for range 2 {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := host.Reattach(rctx, rc, host.Options{Versions: []int{5, 6}}, host.ReattachOptions{TrustTCPListener: trustTCP})
		if err != nil {
			rcancel()
			t.Fatal(err)
		}
		if s := schema(t, c); !strings.Contains(s, "test_widget") {
			t.Errorf("schema through the reattached connection: %s", s)
		}
		c.Close()
		rcancel()
	}
	select {
	case err := <-done:
		t.Fatalf("the provider stopped after a host closed its client: %v", err)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the provider did not stop when its context ended")
	}
	pw.Close()
}
