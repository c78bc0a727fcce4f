package plugin_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

// runInProcess runs a plugin with env inside the test and returns its
// handshake line and Run's result.
func runInProcess(t *testing.T, env map[string]string) (handshake.Line, <-chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		// In the test's own process: no host to watch (under Wine its parent
		// is not a process it can open, which counts as gone).
		done <- plugin.RunIn(context.Background(), plugin.Config{
			Cookie:   cookie,
			Versions: map[int]plugin.Register{1: registerHealthOnly},
		}, plugin.Harness{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, Handshake: pw, KeepStdio: true, NoParentWatch: true})
	}()
	text, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	t.Cleanup(func() { pw.Close() })
	l, err := handshake.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return l, done
}

// TestRunMultiplexed: asked for multiplexing, a plugin says true in the
// 7th field, serves its host over the one connection it accepts, removes
// its socket once connected, and stops cleanly (Run returns nil) when its
// host hangs up.
func TestRunMultiplexed(t *testing.T) {
	l, done := runInProcess(t, map[string]string{cookie.Key: cookie.Value, handshake.EnvProtocolVersions: "1", handshake.EnvMultiplexGRPC: "true"})
	if !l.HasMultiplex || !l.Multiplex {
		t.Fatalf("handshake %q: want a 7th field saying true", l.String())
	}
	raw, err := net.Dial(l.Network, l.Address)
	if err != nil {
		t.Fatal(err)
	}
	mux, err := brokerwire.DialMux(raw)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("passthrough:///plugin",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return mux.Open() }))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: wire.HealthService})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health over the multiplexed connection: %v %v", resp, err)
	}
	if _, err := os.Stat(l.Address); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s still there once the host is connected: %v", l.Address, err)
	}
	mux.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after the host hung up: %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its host hung up")
	}
}

// TestRunMultiplexFalse: PLUGIN_MULTIPLEX_GRPC=false is no request; the
// plugin serves as usual and prints the 6-field line.
func TestRunMultiplexFalse(t *testing.T) {
	l, done := runInProcess(t, map[string]string{cookie.Key: cookie.Value, handshake.EnvProtocolVersions: "1", handshake.EnvMultiplexGRPC: "false"})
	if l.HasMultiplex {
		t.Errorf("handshake %q has a 7th field", l.String())
	}
	raw, err := net.Dial(l.Network, l.Address)
	if err != nil {
		t.Fatal(err)
	}
	raw.Close()
	// Two connections in a row work: the socket was not taken over.
	target := l.Address // loopback TCP on Windows
	if l.Network == "unix" {
		target = "unix:" + l.Address
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: wire.HealthService}); err != nil {
		t.Errorf("health: %v", err)
	}
	conn.Close()
	if _, err := os.Stat(l.Address); err != nil && l.Network == "unix" {
		t.Errorf("socket: %v", err)
	}
	// Stop it through the controller, as a host would.
	cc, _ := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer cc.Close()
	shutdown(t, cc)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Shutdown")
	}
}

// shutdown calls the plugin's GRPCController.Shutdown on cc.
func shutdown(t *testing.T, cc *grpc.ClientConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := pluginpb.NewGRPCControllerClient(cc).Shutdown(ctx, &pluginpb.Empty{}); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}
