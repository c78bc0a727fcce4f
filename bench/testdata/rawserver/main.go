// Command rawserver is the plain grpc-go baseline of the benchmarks: the
// echo service on a unix socket in a fresh directory, with mutual TLS when
// BENCH_CLIENT_CERT holds the client's certificate (PEM). It prints
// "ADDRESS|SERVERCERT" (the certificate DER, base64, empty without TLS) and
// serves until its standard input closes or SIGTERM. With BENCH_TRACE=1
// it traces every call with otelgrpc (echo.TracerProvider).
//
// With BENCH_LISTEN=HOST:PORT it is instead the baseline of the remote
// rows: the echo service on that TCP address, with the mutual TLS of a
// plugin service read from BENCH_TLS_CERT, BENCH_TLS_KEY and
// BENCH_TLS_CLIENT_CA (PEM files); it prints "ADDRESS|".
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/plugkit/plugkit/automtls"
	"github.com/plugkit/plugkit/bench/internal/echo"
)

func main() {
	if addr := os.Getenv("BENCH_LISTEN"); addr != "" {
		serveTCP(addr)
		return
	}
	dir, err := os.MkdirTemp("", "rawgrpc-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		fail(err)
	}
	var opts []grpc.ServerOption
	var certB64 string
	if p := os.Getenv("BENCH_CLIENT_CERT"); p != "" {
		// automtls only makes the key pair; the TLS configuration is
		// written out here with crypto/tls alone.
		id, err := automtls.New()
		if err != nil {
			fail(err)
		}
		block, _ := pem.Decode([]byte(p))
		if block == nil {
			fail(fmt.Errorf("BENCH_CLIENT_CERT is not PEM"))
		}
		clientCert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			fail(err)
		}
		pool := x509.NewCertPool()
		pool.AddCert(clientCert)
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{id.Certificate},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
			MinVersion:   tls.VersionTLS12,
		})))
		certB64 = base64.RawStdEncoding.EncodeToString(id.DER())
	}
	if tp := echo.TracerProvider(); tp != nil {
		opts = append(opts, grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp),
			otelgrpc.WithPropagators(propagation.TraceContext{}), otelgrpc.WithMeterProvider(noop.NewMeterProvider()))))
	}
	srv := grpc.NewServer(opts...)
	echo.Register(srv)
	go srv.Serve(ln)
	fmt.Printf("%s|%s\n", ln.Addr(), certB64)
	io.Copy(io.Discard, os.Stdin)
	srv.Stop()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "rawserver:", err)
	os.Exit(1)
}

// serveTCP serves the echo service on addr with static mutual TLS.
func serveTCP(addr string) {
	cert, err := tls.LoadX509KeyPair(os.Getenv("BENCH_TLS_CERT"), os.Getenv("BENCH_TLS_KEY"))
	if err != nil {
		fail(err)
	}
	ca, err := os.ReadFile(os.Getenv("BENCH_TLS_CLIENT_CA"))
	if err != nil {
		fail(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		fail(fmt.Errorf("BENCH_TLS_CLIENT_CA holds no certificate"))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fail(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	})))
	echo.Register(srv)
	go srv.Serve(ln)
	fmt.Printf("%s|\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	srv.Stop()
}
