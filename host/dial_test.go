package host_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
)

func replica(t *testing.T, conn testgrpc.TestServiceClient) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := conn.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	return string(resp.GetPayload().GetBody()), err
}

func TestDialBalancesFailsOverAndReconnects(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addrA, stopA := remotetest.Start(t, pki.ServiceEnv("127.0.0.1:0"), "a", plugin.Config{})
	addrB, stopB := remotetest.Start(t, pki.ServiceEnv("127.0.0.1:0"), "b", plugin.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	client, err := host.Dial(ctx, host.Remote{Endpoints: []string{addrA, addrB}, ReconnectMaxDelay: 500 * time.Millisecond},
		host.Options{Security: host.TLS(pki.HostTLS()), Versions: []int{1, 2}, Name: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if client.Version() != 1 || client.Pid() != 0 || len(client.Endpoints()) != 2 || !client.TLS() {
		t.Fatalf("version %d, pid %d, endpoints %v, tls %v", client.Version(), client.Pid(), client.Endpoints(), client.TLS())
	}
	stub := testgrpc.NewTestServiceClient(client.Conn())

	// Both replicas get calls (round_robin, once both are healthy).
	waitForBothReplicas(t, stub)

	// A drained replica gets no more calls, and no call fails.
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		id, err := replica(t, stub)
		if err != nil || id != "b" {
			t.Fatalf("after replica a stopped: %q, %v; want every call on b", id, err)
		}
	}

	// None left: calls fail at once with an error naming the endpoint.
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
	checkFailsFast(t, stub, "svc", addrA, addrB)

	// A replica back on its address: the connection finds it again.
	remotetest.Start(t, pki.ServiceEnv(addrA), "a", plugin.Config{})
	deadline := time.Now().Add(15 * time.Second)
	for {
		id, err := replica(t, stub)
		if err == nil && id == "a" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reconnection to the restarted replica: %q, %v", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Close disconnects without stopping the shared service.
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := host.Dial(ctx, host.Remote{Endpoints: []string{addrA}}, host.Options{Security: host.TLS(pki.HostTLS()), Versions: []int{1}})
	if err != nil {
		t.Fatalf("the service stopped when a host closed its client: %v", err)
	}
	again.Close()
}

// waitForBothReplicas calls until both replicas, "a" and "b", answered.
func waitForBothReplicas(t *testing.T, stub testgrpc.TestServiceClient) {
	t.Helper()
	seen := map[string]int{}
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) < 2 && time.Now().Before(deadline) {
		id, err := replica(t, stub)
		if err != nil {
			t.Fatal(err)
		}
		seen[id]++
	}
	if len(seen) != 2 {
		t.Fatalf("calls went to %v; want both replicas", seen)
	}
}

// checkFailsFast checks that a call with no replica up fails at once
// with an *host.EndpointError naming the plugin and an endpoint.
func checkFailsFast(t *testing.T, stub testgrpc.TestServiceClient, name string, endpoints ...string) {
	t.Helper()
	start := time.Now()
	_, err := replica(t, stub)
	var ee *host.EndpointError
	if !errors.As(err, &ee) || status.Code(err) != codes.Unavailable {
		t.Fatalf("with no replica up: %v (%T); want an *host.EndpointError with code Unavailable", err, err)
	}
	if !slices.Contains(endpoints, ee.Endpoint) && ee.Endpoint != strings.Join(endpoints, ",") {
		t.Fatalf("EndpointError names %q; want one of %v", ee.Endpoint, endpoints)
	}
	if !strings.Contains(err.Error(), name) {
		t.Fatalf("error %q does not name the plugin", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the call took %v to fail; it must fail fast", d)
	}
}

func TestDialRefusals(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := remotetest.Start(t, pki.ServiceEnv("127.0.0.1:0"), "a", plugin.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name   string
		remote host.Remote
		opts   host.Options
		want   string
		wait   time.Duration // bounds Dial's wait for a healthy endpoint
	}{
		{"no TLS", host.Remote{Endpoints: []string{addr}}, host.Options{Versions: []int{1}}, "needs Options.Security set to host.TLS", 0},
		{"plain text off loopback", host.Remote{Endpoints: []string{"10.213.0.9:7000"}}, host.Options{Versions: []int{1}, Security: host.Plaintext()}, "loopback only", 0},
		{"bad endpoint", host.Remote{Endpoints: []string{"7000"}}, host.Options{Versions: []int{1}, Security: host.TLS(pki.HostTLS())}, "HOST:PORT", 0},
		{"bad balancer", host.Remote{Endpoints: []string{addr}, Balancing: "random"}, host.Options{Versions: []int{1}, Security: host.TLS(pki.HostTLS())}, "Balancing", 0},
		{"no versions", host.Remote{Endpoints: []string{addr}}, host.Options{Security: host.TLS(pki.HostTLS())}, "Versions is empty", 0},
		{"other version", host.Remote{Endpoints: []string{addr}}, host.Options{Versions: []int{2}, Security: host.TLS(pki.HostTLS())}, "plugin supports [1]", 0},
		{"no client certificate", host.Remote{Endpoints: []string{addr}}, host.Options{Versions: []int{1}, Security: host.TLS(pki.NoCertTLS())}, "answered its health check", 2 * time.Second},
		{"foreign certificate", host.Remote{Endpoints: []string{addr}}, host.Options{Versions: []int{1}, Security: host.TLS(pki.ForeignTLS())}, "PLUGKIT_TLS_CLIENT_CA", 2 * time.Second},
		{"AutoMTLS", host.Remote{Endpoints: []string{addr}}, host.Options{Versions: []int{1}, Security: host.AutoMTLS(nil)}, "needs Options.Security set to host.TLS", 0},
		{"TLS without a configuration", host.Remote{Endpoints: []string{addr}}, host.Options{Versions: []int{1}, Security: host.TLS(nil)}, "host.TLS(nil)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dctx, cancel := context.WithTimeout(ctx, cmp.Or(tc.wait, 20*time.Second))
			defer cancel()
			c, err := host.Dial(dctx, tc.remote, tc.opts)
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Dial = %v; want it to mention %q", err, tc.want)
			}
			t.Log(err)
			if tc.name == "other version" {
				var ve *handshake.VersionError
				if !errors.As(err, &ve) {
					t.Fatalf("Dial = %T, want a *handshake.VersionError", err)
				}
			}
		})
	}
}

// TestDialHealthFailureKeepsStatusCode: when no endpoint answers its
// health check, Dial's error still carries gRPC's code, so a caller can
// tell Unavailable (retry later) from the rest with status.Code.
func TestDialHealthFailureKeepsStatusCode(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := remotetest.Start(t, pki.ServiceEnv("127.0.0.1:0"), "a", plugin.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// The service refuses a host without a client certificate: every
	// health check fails with Unavailable until the deadline.
	c, err := host.Dial(ctx, host.Remote{Endpoints: []string{addr}}, host.Options{Versions: []int{1}, Security: host.TLS(pki.NoCertTLS())})
	if err == nil {
		c.Close()
		t.Fatal("Dial without a client certificate succeeded")
	}
	if !strings.Contains(err.Error(), "answered its health check") {
		t.Fatalf("Dial = %v; want the health check's failure", err)
	}
	if code := status.Code(err); code != codes.Unavailable {
		t.Fatalf("status.Code(Dial's error) = %v, want Unavailable: the gRPC cause is lost (%v)", code, err)
	}
}
