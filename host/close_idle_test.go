package host_test

import (
	"context"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/wire"
)

// TestCloseLetsCallsInFlightFinish: a Close while one of the host's calls
// is in flight (a health Watch stream, which only its caller ends) keeps
// the plugin's graceful stop, which tells the stream NOT_SERVING and
// waits for it, rather than the stop at once of an idle host
// (wire.ShutdownIdleHeader), which would cut it.
func TestCloseLetsCallsInFlightFinish(t *testing.T) {
	c := start(t, config(t, "kv"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	watchCtx, endWatch := context.WithCancel(ctx)
	defer endWatch()
	watch, err := healthpb.NewHealthClient(c.Conn()).Watch(watchCtx, &healthpb.HealthCheckRequest{Service: wire.HealthService})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first Watch answer: %v, %v; want SERVING", resp, err)
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	resp, err := watch.Recv()
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("the Watch call in flight at Close got %v, %v; want NOT_SERVING from a graceful stop, not its end", resp, err)
	}
	endWatch()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Close did not return within 60 s of the call's end")
	}
}
