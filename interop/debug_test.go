package interop_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/debugline"
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

// TestGoPluginHostReattachesToDebugPlugin starts a plugkit plugin in debug
// mode (PLUGKIT_DEBUG=1, no cookie, no host), as a person does under a
// debugger. A go-plugin v1.8.0 host reattaches to it from the printed
// line (Test set, as Terraform does with TF_REATTACH_PROVIDERS), uses it
// and Kills its client; a plugkit host then reattaches from the same line
// and Closes. The plugin serves through all of it, and stops with status 0
// when interrupted.
func TestGoPluginHostReattachesToDebugPlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, rc, waited := startDebugPlugin(ctx, t)

	gp := useFromGoPluginHost(t, rc)
	if !testutil.Running(rc.Pid) {
		t.Fatal("the plugin in debug mode exited when the go-plugin host killed its client")
	}

	pc, err := host.Reattach(ctx, rc, host.Options{Versions: []int{1}, Logger: slog.New(slog.DiscardHandler)}, host.ReattachOptions{TrustTCPListener: trustTCP})
	if err != nil {
		t.Fatal(err)
	}
	putGet(t, objectstorev1.NewObjectStoreClient(pc.Conn()), "debug-plugkit")
	if err := pc.Close(); err != nil {
		t.Fatal(err)
	}
	if !testutil.Running(rc.Pid) {
		t.Fatal("the plugin in debug mode exited when the plugkit host closed its client")
	}

	// Windows has no interrupt to send to another process (os.Interrupt
	// is a console's Ctrl+C there): the plugin is killed instead.
	interrupted := cmd.Process.Signal(os.Interrupt) == nil
	if !interrupted {
		cmd.Process.Kill()
	}
	select {
	case err := <-waited:
		if err != nil && interrupted {
			t.Fatalf("the plugin in debug mode after an interrupt: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin in debug mode still runs 10 s after an interrupt")
	}
	// go-plugin watches a reattached pid once a second; wait until it has
	// seen the exit, so that its goroutine is gone before goleak looks.
	if !waitFor(5*time.Second, gp.Exited) {
		t.Error("the go-plugin client did not notice the plugin's exit")
	}
}

// startDebugPlugin starts the pk-store plugin in debug mode and checks the
// reattach line it prints: one plugin, its own pid, Test set, protocol
// version 1. The plugin is killed when the test ends; its exit status
// arrives on the returned channel.
func startDebugPlugin(ctx context.Context, t *testing.T) (*exec.Cmd, handshake.Reattach, <-chan error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, self(t))
	cmd.Env = append(os.Environ(), append(childEnv("pk-store"), plugin.EnvDebug+"=1")...)
	cmd.Stderr = io.Discard
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	go func() {
		io.Copy(io.Discard, br)
		waited <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	if err != nil {
		t.Fatalf("reading the reattach line: %v", err)
	}
	if !strings.HasPrefix(line, "PLUGKIT_REATTACH='") {
		t.Fatalf("debug mode printed %q", line)
	}
	rcs, err := debugline.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	_, rc, err := debugline.Only(rcs)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Pid != cmd.Process.Pid || !rc.Test || rc.ProtocolVersion != 1 {
		t.Fatalf("reattach configuration %+v", rc)
	}
	return cmd, rc, waited
}

// useFromGoPluginHost reattaches a go-plugin v1.8.0 client to the plugin
// described by rc, puts and gets an object through it, then Kills the
// client and closes its connection. It returns the client, whose Exited
// reports when go-plugin has seen the plugin's exit.
func useFromGoPluginHost(t *testing.T, rc handshake.Reattach) *goplugin.Client {
	t.Helper()
	addr, err := resolveAddr(rc.Addr.Network, rc.Addr.String)
	if err != nil {
		t.Fatal(err)
	}
	gp := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  pkHandshake,
		Plugins:          goplugin.PluginSet{"objectstore": &objectStorePlugin{}},
		Reattach:         &goplugin.ReattachConfig{Protocol: goplugin.Protocol(rc.Protocol), ProtocolVersion: rc.ProtocolVersion, Addr: addr, Pid: rc.Pid, Test: rc.Test},
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
	})
	rpc, err := gp.Client()
	if err != nil {
		gp.Kill()
		t.Fatalf("go-plugin Client (reattach to debug mode): %v", err)
	}
	if err := pingWithin(rpc, 10*time.Second); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	raw, err := rpc.Dispense("objectstore")
	if err != nil {
		t.Fatal(err)
	}
	putGet(t, raw.(objectstorev1.ObjectStoreClient), "debug-goplugin")
	gp.Kill()
	// In test mode go-plugin's Kill leaves the plugin alone and keeps its
	// connection (Terraform exits instead); ClientProtocol.Close would send
	// Shutdown. Close the connection alone, so nothing leaks into goleak.
	rpc.(*goplugin.GRPCClient).Conn.Close()
	return gp
}
