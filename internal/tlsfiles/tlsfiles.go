package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Client is the TLS configuration of a host for a plugin service: the CA
// that signed the service's certificate, and the host's own certificate
// and key, all PEM files. serverName, when set, is the name to expect in
// the service's certificate instead of each endpoint's host.
func Client(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	if caFile == "" || certFile == "" || keyFile == "" {
		return nil, errors.New("TLS needs the service's CA and the host's certificate and key (PEM files): a plugin service requires mutual TLS")
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("the host's certificate and key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}, nil
}
