package plugin_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
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

// TestServiceUnaryCallStartsNoGoroutineOfItsOwn: a unary call to a plugin
// service starts no more goroutines than the same call to a plain grpc-go
// server with the same mutual TLS (one, for the call). The in-flight budget
// settled each call in a goroutine of its own (context.AfterFunc), started
// as the call ended and before its trailers were queued: across a network
// that cost a thread wake-up per call.
func TestServiceUnaryCallStartsNoGoroutineOfItsOwn(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plain := grpc.NewServer(grpc.Creds(credentials.NewTLS(serviceTLS(t, pki))))
	testgrpc.RegisterTestServiceServer(plain, &remotetest.TestService{ID: "one"})
	go plain.Serve(ln)
	t.Cleanup(plain.Stop)
	addr, _ := runService(t, pki.ServiceEnv("127.0.0.1:0"), plugin.Config{})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const calls, created = 200, "/sched/goroutines-created:goroutines"
	perCall := func(addr string) float64 {
		client := testgrpc.NewTestServiceClient(dialTLS(t, addr, pki.HostTLS()))
		call := func() {
			if _, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
				t.Fatalf("%s: %v", addr, err)
			}
		}
		for range 20 { // connect, warm up
			call()
		}
		before := metricValue(created)
		for range calls {
			call()
		}
		return float64(metricValue(created)-before) / calls
	}
	want, got := perCall(ln.Addr().String()), perCall(addr)
	t.Logf("goroutines started per unary call: plain grpc-go %.2f, plugin service %.2f", want, got)
	if got > want+0.25 {
		t.Errorf("a unary call to the plugin service starts %.2f goroutines, a plain grpc-go server's %.2f: the service adds %.2f per call (a thread wake-up each across a network)", got, want, got-want)
	}
}
