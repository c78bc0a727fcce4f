package plugin_test

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
)

// serviceTLS is the mutual TLS of pki's service, made with crypto/tls
// alone: a server of a test's own serving as the plugin service would.
func serviceTLS(t *testing.T, pki *remotetest.PKI) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AppendCertsFromPEM(caPEM)
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
}

// unaryCosts serves pki's service twice, as a plain grpc-go server with
// the same mutual TLS and as a plugin service, and returns what one unary
// call over TLS on loopback adds to each runtime/metrics counter named,
// for each server: plain first, then the service.
func unaryCosts(t *testing.T, names ...string) (plain, service []float64) {
	t.Helper()
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(serviceTLS(t, pki))))
	testgrpc.RegisterTestServiceServer(srv, &remotetest.TestService{ID: "one"})
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	addr, _ := runService(t, pki.ServiceEnv("127.0.0.1:0"), plugin.Config{})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const calls = 1000
	perCall := func(addr string) []float64 {
		client := testgrpc.NewTestServiceClient(dialTLS(t, addr, pki.HostTLS()))
		call := func() {
			if _, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
				t.Fatalf("%s: %v", addr, err)
			}
		}
		for range 20 { // connect, warm up
			call()
		}
		// No GC while counting: a GC empties the sync.Pools that both
		// servers' buffers come from, and refilling them would count.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		before := make([]uint64, len(names))
		for i, n := range names {
			before[i] = metricValue(n)
		}
		for range calls {
			call()
		}
		out := make([]float64, len(names))
		for i, n := range names {
			out[i] = float64(metricValue(n)-before[i]) / calls
		}
		return out
	}
	return perCall(ln.Addr().String()), perCall(addr)
}

// TestServiceUnaryCallStartsNoGoroutineOfItsOwn: a unary call to a plugin
// service starts no more goroutines than the same call to a plain grpc-go
// server with the same mutual TLS (one, for the call). The in-flight budget
// settled each call in a goroutine of its own (context.AfterFunc), started
// as the call ended and before its trailers were queued: across a network
// that cost a thread wake-up per call.
func TestServiceUnaryCallStartsNoGoroutineOfItsOwn(t *testing.T) {
	plain, service := unaryCosts(t, "/sched/goroutines-created:goroutines")
	want, got := plain[0], service[0]
	t.Logf("goroutines started per unary call: plain grpc-go %.2f, plugin service %.2f", want, got)
	if got > want+0.25 {
		t.Errorf("a unary call to the plugin service starts %.2f goroutines, a plain grpc-go server's %.2f: the service adds %.2f per call (a thread wake-up each across a network)", got, want, got-want)
	}
}

// TestServiceUnaryCallAllocations: what the in-flight budget and its stats
// handler allocate per unary call, beyond a plain grpc-go server with the
// same mutual TLS, stays small (client and server in this process: the
// client's allocations are the same for both).
func TestServiceUnaryCallAllocations(t *testing.T) {
	// The median of five rounds, each measuring both servers: what
	// else the process allocates meanwhile (timers, the runtime, what
	// earlier tests left ending) and how often grpc-go's buffer pools
	// hit move a round's counts either way; with the fewest of three
	// rounds of each server, taken apart, make test once saw 25.0 extra
	// objects (plain grpc-go's fewest 172.5, its usual 178-181).
	type round struct{ want, got float64 }
	var rounds [5]round
	for i := range rounds {
		plain, service := unaryCosts(t, "/gc/heap/allocs:objects")
		rounds[i] = round{plain[0], service[0]}
	}
	slices.SortFunc(rounds[:], func(a, b round) int { return cmp.Compare(a.got-a.want, b.got-b.want) })
	want, got := rounds[2].want, rounds[2].got
	t.Logf("heap objects allocated per unary call, the round of median difference of five: plain grpc-go %.1f, plugin service %.1f", want, got)
	if got > want+maxExtraObjects {
		t.Errorf("a unary call to the plugin service allocates %.1f objects, a plain grpc-go server's %.1f: the service adds %.1f per call, more than %.1f", got, want, got-want, maxExtraObjects)
	}
}

// maxExtraObjects bounds the heap objects a plugin service's unary call
// allocates beyond plain grpc-go's (TestServiceUnaryCallAllocations):
// measured 21.6-23.1, of which ~17 are grpc-go's own for any stats
// handler (the stats events, the copies of the headers they carry) and
// the rest the call's account (itself, its context value, the settling
// at the context's end); 25.7-27.6 when every call made two wake-up
// channels and a slice for its message's size. One round varies by about
// an object (24.6 once under Wine), hence the median of five rounds.
const maxExtraObjects = 24.5
