package automtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// ServerName is the name both certificates carry and both sides verify.
const ServerName = "localhost"

// lifetime is how long a certificate is valid. It lives only as long as
// the process, but a plugin may run for years inside a daemon.
const lifetime = 10 * 365 * 24 * time.Hour

// Identity is one side's certificate and key.
type Identity struct {
	// Certificate is the key pair, ready for tls.Config.
	Certificate tls.Certificate
	// Leaf is the parsed certificate.
	Leaf *x509.Certificate
}

// New makes a fresh self-signed identity.
func New() (*Identity, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("automtls: generating a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("automtls: generating a serial number: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: ServerName, Organization: []string{"plugkit"}},
		DNSNames:              []string{ServerName},
		NotBefore:             now.Add(-30 * time.Second),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageKeyAgreement | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("automtls: signing the certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("automtls: reading back the certificate: %w", err)
	}
	return &Identity{
		Certificate: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		Leaf:        leaf,
	}, nil
}

// DER returns the certificate in DER form, as the handshake line carries it.
func (id *Identity) DER() []byte { return id.Leaf.Raw }

// PEM returns the certificate in PEM form, as PLUGIN_CLIENT_CERT carries it.
func (id *Identity) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: id.Leaf.Raw})
}

// Config returns the TLS configuration for talking to peer. It serves as
// both a client and a server configuration, as go-plugin's does: it
// presents this identity, trusts only peer, and requires the peer's
// certificate in both directions.
func (id *Identity) Config(peer *x509.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(peer)
	return &tls.Config{
		Certificates: []tls.Certificate{id.Certificate},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ServerName:   ServerName,
		MinVersion:   tls.VersionTLS12,
		// X25519 alone as key exchange: Go's default adds the hybrid
		// X25519MLKEM768, whose key generation, encapsulation and
		// first-use self-tests in both processes cost ~0.4 ms of every
		// cold start (2-3% of a whole plugkit inspect, measured in
		// interleaved pairs). Its protection is against traffic recorded
		// today and decrypted by a future quantum computer; recording a
		// host's connection to its own child process over a private unix
		// socket (loopback TCP on Windows) takes the privileges that read
		// both processes' memory anyway. A peer that offers both, as a
		// go-plugin host or plugin does, agrees on X25519 without a
		// further round trip. P-256 comes second for peers without
		// X25519: gRPC's C core (the Python SDK's plugins) offers P-256
		// only, and agrees on it after one HelloRetryRequest.
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256},
	}
}

// ErrNoCertificate reports PEM input without a certificate in it.
var ErrNoCertificate = errors.New("no CERTIFICATE block in the PEM data")

// ParsePEM reads the peer certificate a host sent in PLUGIN_CLIENT_CERT.
func ParsePEM(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("automtls: host certificate (%d bytes): %w", len(data), ErrNoCertificate)
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("automtls: host certificate: %w", err)
		}
		return cert, nil
	}
}

// ParseDER reads the peer certificate a plugin sent in its handshake line.
func ParseDER(der []byte) (*x509.Certificate, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("automtls: plugin certificate from the handshake: %w", err)
	}
	return cert, nil
}
