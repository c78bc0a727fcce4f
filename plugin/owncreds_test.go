package plugin_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
)

// openService answers StreamingOutputCall with one response, then holds
// the stream open until its client hangs up: a long-lived stream, as a
// host's health watch is.
type openService struct {
	budgetService
}

func (openService) StreamingOutputCall(_ *testgrpc.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
	if err := s.Send(&testgrpc.StreamingOutputCallResponse{}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

// A plugin service whose Config.ServerOptions set its own grpc.Creds (TLS
// the service configures itself) is reachable by host.Dial: Dial's health
// check passes beside its health watch, and health, a unary call and a
// client stream are served while long-lived streams stay open. The
// in-flight budget cannot see message sizes through those credentials
// and charged each message the connection's whole share, which the
// watch's headers and request, held for the connection's life, kept from
// every later call: Dial's health check timed out.
// With the default budget, and with the smallest the docs allow under
// such credentials: four times the maximum message size.
func TestServiceWithOwnCredentialsServesHostDial(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	own := grpc.Creds(credentials.NewTLS(serviceTLS(t, pki)))
	t.Run("default budget", func(t *testing.T) {
		ownCredentialsServeHostDial(t, pki, pki.ServiceEnv("127.0.0.1:0"), plugin.Config{ServerOptions: []grpc.ServerOption{own}})
	})
	t.Run("four maximum messages", func(t *testing.T) {
		const maxMsg = 1 << 20
		env := pki.ServiceEnv("127.0.0.1:0")
		env[plugin.EnvMaxInflightBytes] = strconv.Itoa(4 * maxMsg)
		ownCredentialsServeHostDial(t, pki, env, plugin.Config{ServerOptions: []grpc.ServerOption{own}, MaxMessageSize: maxMsg})
	})
}

func ownCredentialsServeHostDial(t *testing.T, pki *remotetest.PKI, env map[string]string, cfg plugin.Config) {
	cfg.Versions = testService(&openService{})
	addr, _ := runService(t, env, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dctx, dcancel := context.WithTimeout(ctx, 20*time.Second)
	c, err := host.Dial(dctx, host.Remote{Endpoints: []string{addr}}, host.Options{Security: host.TLS(pki.HostTLS()), Versions: []int{1}})
	dcancel()
	if err != nil {
		t.Fatalf("host.Dial to a service with its own credentials: %v", err)
	}
	defer c.Close()
	client := testgrpc.NewTestServiceClient(c.Conn())
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	open, err := client.StreamingOutputCall(sctx, &testgrpc.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.Recv(); err != nil {
		t.Fatalf("a long-lived stream: %v", err)
	}
	for i := range 3 {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		if err := c.Ping(cctx); err != nil {
			ccancel()
			t.Fatalf("health check %d beside the open streams: %v", i, err)
		}
		if _, err := client.UnaryCall(cctx, &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: make([]byte, 100<<10)}}); err != nil {
			ccancel()
			t.Fatalf("unary call %d beside the open streams: %v", i, err)
		}
		stream, err := client.StreamingInputCall(cctx)
		if err != nil {
			ccancel()
			t.Fatal(err)
		}
		for range 3 {
			if err := stream.Send(&testgrpc.StreamingInputCallRequest{Payload: &testgrpc.Payload{Body: make([]byte, 1<<10)}}); err != nil {
				ccancel()
				t.Fatal(err)
			}
		}
		resp, err := stream.CloseAndRecv()
		ccancel()
		if err != nil || resp.GetAggregatedPayloadSize() != 3<<10 {
			t.Fatalf("client stream %d beside the open streams: %v, %v; want its 3 KiB read", i, resp, err)
		}
	}
}
