package remotetest

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/internal/testpki"
)

// PKI is a team's CA with a service and a host certificate, plus a host
// certificate from another CA, all written as PEM files to Dir.
type PKI struct {
	Dir                     string
	CA                      *testpki.CA
	CAFile                  string
	ServerCert, ServerKey   string
	HostCert, HostKey       string
	ForeignCert, ForeignKey string
	host, foreign           testpki.Pair
}

// NewPKI writes a PKI to dir; the service certificate names hosts (DNS
// names or IP addresses).
func NewPKI(dir string, hosts ...string) (*PKI, error) {
	ca, err := testpki.NewCA("plugkit test CA")
	if err != nil {
		return nil, err
	}
	other, err := testpki.NewCA("another CA")
	if err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir, CA: ca}
	if p.CAFile, err = ca.WriteCA(dir, "ca"); err != nil {
		return nil, err
	}
	srv, err := ca.Issue("plugin service", hosts...)
	if err != nil {
		return nil, err
	}
	if p.ServerCert, p.ServerKey, err = srv.Write(dir, "server"); err != nil {
		return nil, err
	}
	if p.host, err = ca.Issue("host"); err != nil {
		return nil, err
	}
	if p.HostCert, p.HostKey, err = p.host.Write(dir, "host"); err != nil {
		return nil, err
	}
	if p.foreign, err = other.Issue("host of another CA"); err != nil {
		return nil, err
	}
	if p.ForeignCert, p.ForeignKey, err = p.foreign.Write(dir, "foreign"); err != nil {
		return nil, err
	}
	return p, nil
}

// ServiceEnv is the environment of a TLS plugin service on addr.
func (p *PKI) ServiceEnv(addr string) map[string]string {
	return map[string]string{
		"PLUGKIT_LISTEN":        addr,
		"PLUGKIT_TLS_CERT":      p.ServerCert,
		"PLUGKIT_TLS_KEY":       p.ServerKey,
		"PLUGKIT_TLS_CLIENT_CA": p.CAFile,
	}
}

// Environ is ServiceEnv in KEY=VALUE form.
func (p *PKI) Environ(addr string) []string {
	var out []string
	for k, v := range p.ServiceEnv(addr) {
		out = append(out, k+"="+v)
	}
	return out
}

// HostTLS is the host's client configuration: its certificate and the CA.
func (p *PKI) HostTLS() *tls.Config {
	cert, err := p.host.TLS()
	if err != nil {
		panic(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: p.CA.Pool(), MinVersion: tls.VersionTLS12}
}

// NoCertTLS trusts the service but has no client certificate.
func (p *PKI) NoCertTLS() *tls.Config {
	return &tls.Config{RootCAs: p.CA.Pool(), MinVersion: tls.VersionTLS12}
}

// ForeignTLS trusts the service and presents a certificate of another CA.
func (p *PKI) ForeignTLS() *tls.Config {
	cert, err := p.foreign.TLS()
	if err != nil {
		panic(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: p.CA.Pool(), MinVersion: tls.VersionTLS12}
}

// Lookup returns a LookupEnv over env.
func Lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

// TestService is grpc.testing.TestService answering with its ID:
// UnaryCall returns Payload.Body = ID after sleeping ResponseSize
// milliseconds.
type TestService struct {
	testgrpc.UnimplementedTestServiceServer
	ID string
}

// Register registers the service; it has the type of plugin.Register.
func (s *TestService) Register(srv *grpc.Server, _ *broker.Broker) error {
	testgrpc.RegisterTestServiceServer(srv, s)
	return nil
}

// EmptyCall answers at once.
func (s *TestService) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

// UnaryCall sleeps, then names the replica.
func (s *TestService) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	select {
	case <-time.After(time.Duration(req.GetResponseSize()) * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &testgrpc.SimpleResponse{Payload: &testgrpc.Payload{Body: []byte(s.ID)}}, nil
}

// WriteFileAtomic replaces path's contents in one rename.
func WriteFileAtomic(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.tmp", filepath.Base(path)))
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
