package plugin_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testpki"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

func runService(t *testing.T, env map[string]string, cfg plugin.Config) (string, func() error) {
	t.Helper()
	return remotetest.Start(t, env, "one", cfg)
}

func dialTLS(t *testing.T, addr string, tc *tls.Config) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func health(ctx context.Context, cc *grpc.ClientConn) (healthpb.HealthCheckResponse_ServingStatus, metadata.MD, error) {
	var md metadata.MD
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: wire.HealthService}, grpc.Header(&md))
	return resp.GetStatus(), md, err
}

func TestServiceRefusesToStartWithoutTLS(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	versions := map[int]plugin.Register{1: (&remotetest.TestService{}).Register}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no TLS", map[string]string{plugin.EnvListen: "0.0.0.0:0"}, plugin.EnvInsecureLoopback + "=1"},
		{"no TLS on loopback without the opt-in", map[string]string{plugin.EnvListen: "127.0.0.1:0"}, "requires mutual TLS"},
		{"insecure opt-in off loopback", map[string]string{plugin.EnvListen: "0.0.0.0:0", plugin.EnvInsecureLoopback: "1"}, "loopback address only"},
		{"no client CA", map[string]string{plugin.EnvListen: "127.0.0.1:0", plugin.EnvTLSCert: pki.ServerCert, plugin.EnvTLSKey: pki.ServerKey}, plugin.EnvTLSClientCA},
		{"bad address", map[string]string{plugin.EnvListen: "7000", plugin.EnvInsecureLoopback: "1"}, "HOST:PORT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := plugin.RunIn(ctx, plugin.Config{Versions: versions}, plugin.Harness{LookupEnv: remotetest.Lookup(tc.env), KeepStdio: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestServiceMutualTLSManyHosts(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := runService(t, pki.ServiceEnv("127.0.0.1:0"), plugin.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Several hosts at once, each with its own connection: health (with
	// the version header), the kind's service, reflection.
	for i := range 3 {
		cc := dialTLS(t, addr, pki.HostTLS())
		st, md, err := health(ctx, cc)
		if err != nil || st != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("host %d: health = %v, %v", i, st, err)
		}
		if v := md.Get(wire.VersionHeader); len(v) != 1 || v[0] != "1" {
			t.Fatalf("host %d: %s header = %q, want [1]", i, wire.VersionHeader, v)
		}
		resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{})
		if err != nil || string(resp.GetPayload().GetBody()) != "one" {
			t.Fatalf("host %d: UnaryCall = %v, %v", i, resp, err)
		}
	}

	for name, tc := range map[string]*tls.Config{"no client certificate": pki.NoCertTLS(), "a certificate of another CA": pki.ForeignTLS()} {
		cc := dialTLS(t, addr, tc)
		if _, _, err := health(ctx, cc); err == nil {
			t.Errorf("a host with %s was served; the service must refuse it", name)
		}
	}
}

func TestServiceInsecureLoopback(t *testing.T) {
	addr, _ := runService(t, map[string]string{plugin.EnvListen: "127.0.0.1:0", plugin.EnvInsecureLoopback: "1"}, plugin.Config{})
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("address %q", addr)
	}
}

func TestServiceDrainsOnStop(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	env := pki.ServiceEnv("127.0.0.1:0")
	env[plugin.EnvDrainTimeout] = "10s"
	addr, stop := runService(t, env, plugin.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cc := dialTLS(t, addr, pki.HostTLS())
	watch, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{Service: wire.HealthService})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first health status = %v, %v", r, err)
	}
	// An in-flight call of 700 ms, then the stop.
	slow := make(chan error, 1)
	go func() {
		resp, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{ResponseSize: 700})
		if err == nil && string(resp.GetPayload().GetBody()) != "one" {
			err = errors.New("wrong answer")
		}
		slow <- err
	}()
	time.Sleep(200 * time.Millisecond)
	stopped := make(chan error, 1)
	start := time.Now()
	go func() { stopped <- stop() }()
	r, err := watch.Recv()
	if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health after the stop = %v, %v; want NOT_SERVING", r, err)
	}
	if err := <-slow; err != nil {
		t.Fatalf("the in-flight call failed during the drain: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("the drain took %v: it waited for more than the in-flight call", d)
	}
}

func TestServiceReloadsRotatedCertificates(t *testing.T) {
	dir := testutil.TempDir(t)
	pki, err := remotetest.NewPKI(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := runService(t, pki.ServiceEnv("127.0.0.1:0"), plugin.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	serverCN := func(tc *tls.Config) (string, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, tc)
		if err != nil {
			return "", err
		}
		defer conn.Close()
		if err := conn.HandshakeContext(ctx); err != nil {
			return "", err
		}
		// TLS 1.3 reports a refused client certificate on the first read.
		conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		var b [1]byte
		if _, err := conn.Read(b[:]); err != nil && !isTimeout(err) {
			return "", err
		}
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
	}
	withH2 := func(tc *tls.Config) *tls.Config { tc.NextProtos = []string{"h2"}; return tc }
	if cn, err := serverCN(withH2(pki.HostTLS())); err != nil || cn != "plugin service" {
		t.Fatalf("before rotation: server CN %q, %v", cn, err)
	}

	// Rotate: a new CA signs a new service certificate and the hosts'
	// certificates from now on.
	ca2, err := testpki.NewCA("rotated CA")
	if err != nil {
		t.Fatal(err)
	}
	srv2, _ := ca2.Issue("rotated service", "127.0.0.1")
	host2, _ := ca2.Issue("rotated host")
	host2Cert, _ := host2.TLS()
	host2TLS := withH2(&tls.Config{Certificates: []tls.Certificate{host2Cert}, RootCAs: ca2.Pool(), MinVersion: tls.VersionTLS12})
	if _, err := serverCN(host2TLS); err == nil {
		t.Fatal("a host of the new CA was served before the rotation")
	}
	if err := remotetest.WriteFileAtomic(pki.ServerCert, srv2.CertPEM); err != nil {
		t.Fatal(err)
	}
	// Half-written (new certificate, old key): the old set keeps serving.
	time.Sleep(1100 * time.Millisecond)
	if cn, err := serverCN(withH2(pki.HostTLS())); err != nil || cn != "plugin service" {
		t.Fatalf("mid-rotation: server CN %q, %v; want the old certificate still served", cn, err)
	}
	if err := remotetest.WriteFileAtomic(pki.ServerKey, srv2.KeyPEM); err != nil {
		t.Fatal(err)
	}
	if err := remotetest.WriteFileAtomic(pki.CAFile, ca2.PEM()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		cn, err := serverCN(host2TLS)
		if err == nil && cn == "rotated service" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after rotation: server CN %q, %v; want the rotated certificate without a restart", cn, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The old hosts' CA is no longer trusted.
	if _, err := serverCN(withH2(&tls.Config{Certificates: pki.HostTLS().Certificates, RootCAs: ca2.Pool()})); err == nil {
		t.Fatal("a host of the old CA is still served after the rotation")
	}
	// And gRPC works with the new material.
	cc := dialTLS(t, addr, host2TLS)
	if st, _, err := health(ctx, cc); err != nil || st != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health with rotated certificates = %v, %v", st, err)
	}
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

func TestServiceHealthPortForProbes(t *testing.T) {
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	_, healthAddr, stop := remotetest.StartProbed(t, pki.ServiceEnv("127.0.0.1:0"), "one", plugin.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Plain text, as Kubernetes' gRPC probe speaks it.
	cc, err := grpc.NewClient("passthrough:///"+healthAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if st, _, err := health(ctx, cc); err != nil || st != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health port: %v, %v", st, err)
	}
	// Health only: the plugin's services are not there.
	if _, err := testgrpc.NewTestServiceClient(cc).EmptyCall(ctx, &testgrpc.Empty{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("the health port served a plugin call: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := health(ctx, cc); err == nil {
		t.Fatal("the health port still answers after the service stopped")
	}
}
