package plugin_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

// TestShutdownIdle: a plugin whose output stays on its pipes
// (wire.EnvStdioPipes) stops at once when its host's Shutdown says the
// host is idle (wire.ShutdownIdleHeader): a call still open (a health
// Watch, which only its caller ends) is cut, and Run returns, although
// the shutdown timeout is ten minutes. Without the header (a go-plugin
// host, or a plugkit host with calls in flight) it stops gracefully: the
// call is told NOT_SERVING and lives on until its caller ends it. A
// plugin whose process exits when Run returns (Serve) does not even stop
// its server after an idle host's Shutdown ("idle, exiting"): Run returns
// and the exit ends the connections all at once; until then the call
// lives on, SERVING, and the connection still answers (before round 5 of
// issue 42 Stop tore it down first).
func TestShutdownIdle(t *testing.T) {
	for _, tc := range []struct {
		name          string
		idle, exiting bool
	}{{"idle", true, false}, {"graceful", false, false}, {"idle, exiting", true, true}} {
		idle := tc.idle
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			pr, pw := io.Pipe()
			env := map[string]string{cookie.Key: cookie.Value, handshake.EnvProtocolVersions: "1", wire.EnvStdioPipes: "1"}
			h := plugin.Harness{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, Handshake: pw, KeepStdio: true, NoParentWatch: true}
			if tc.exiting {
				h = plugin.Exiting(h)
			}
			done := make(chan error, 1)
			go func() {
				done <- plugin.RunIn(context.Background(), plugin.Config{
					Cookie:          cookie,
					Versions:        map[int]plugin.Register{1: registerHealthOnly},
					ShutdownTimeout: 10 * time.Minute,
				}, h)
			}()
			line, err := bufio.NewReader(pr).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, pr)
			defer pw.Close()
			l, err := handshake.Parse(line)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := grpc.NewClient("passthrough:///"+l.Address, grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, l.Network, l.Address)
				}))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			watchCtx, endWatch := context.WithCancel(ctx)
			defer endWatch()
			watch, err := healthpb.NewHealthClient(conn).Watch(watchCtx, &healthpb.HealthCheckRequest{Service: wire.HealthService})
			if err != nil {
				t.Fatal(err)
			}
			if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("first Watch answer: %v, %v; want SERVING", resp, err)
			}
			shutdownCtx := ctx
			if idle {
				shutdownCtx = metadata.AppendToOutgoingContext(ctx, wire.ShutdownIdleHeader, "1")
			}
			// The answer races the stop at once: either is fine.
			if _, err := pluginpb.NewGRPCControllerClient(conn).Shutdown(shutdownCtx, &pluginpb.Empty{}); err != nil && status.Code(err) != codes.Unavailable {
				t.Fatalf("Shutdown: %v", err)
			}
			if tc.exiting {
				checkLeftToTheExit(t, ctx, conn, watch, done)
				return
			}
			resp, err := watch.Recv()
			switch {
			case idle && err == nil:
				t.Errorf("the Watch call lived on (%v) after an idle host's Shutdown: want it cut by the stop at once", resp)
			case !idle && (err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING):
				t.Errorf("the Watch call got %v, %v after a Shutdown without the idle header: want NOT_SERVING from a graceful stop", resp, err)
			}
			if !idle {
				select {
				case err := <-done:
					t.Fatalf("Run returned (%v) while the graceful stop had a call to wait for", err)
				default:
				}
				endWatch()
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-ctx.Done():
				endWatch()
				conn.Close()
				<-done
				t.Fatal("Run did not return within 60 s of the stop")
			}
		})
	}
}

// checkLeftToTheExit checks a plugin that left its connections to its
// process's exit after an idle host's Shutdown: Run returned, and conn and
// the Watch call on it live on, as a stop would not have left them.
func checkLeftToTheExit(t *testing.T, ctx context.Context, conn *grpc.ClientConn, watch grpc.ServerStreamingClient[healthpb.HealthCheckResponse], done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return within 60 s of an idle host's Shutdown")
	}
	// The connection was made before the stop: it needs no listener
	// (Run closed and removed it on its way out), and no new dial.
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: wire.HealthService})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health check after Run returned: %v, %v; want SERVING on the connection left open for the process's exit to close, not torn down by a stop", resp, err)
	}
	// The Watch call was neither cut nor told NOT_SERVING: closing the
	// connection (the exit, here the host) ends it.
	conn.Close()
	if resp, err := watch.Recv(); err == nil {
		t.Fatalf("the Watch call got %v after its connection closed: want its end", resp)
	}
}
