package plugin_test

import (
	"context"
	"net"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
)

// Issue 37 point 5 (Slowloris): 1,000 TCP connections that never send a
// TLS byte held the service's handshake slots (128, each for its 10 s
// timeout) while the rest waited in the listen queue ahead of a host's,
// which failed at 30 s. With them held, a host with its client
// certificate is served: the connections in their handshake are capped,
// and a new one takes the place of the oldest that has sent nothing.
func TestServiceServesHostBesideIdleConnections(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := runService(t, pki.ServiceEnv("127.0.0.1:0"), plugin.Config{})
	const idle = 1000
	for i := range idle {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cc := dialTLS(t, addr, pki.HostTLS())
	start := time.Now()
	st, _, err := health(ctx, cc)
	t.Logf("a host beside %d idle connections: %v, %v after %v", idle, st, err, time.Since(start).Round(time.Millisecond))
	if err != nil || st != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("a host's health check beside %d idle connections: %v, %v; want SERVING within 5 s", idle, st, err)
	}
}
