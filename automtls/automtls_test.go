package automtls

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// connPair returns the two ends of a loopback TCP connection. Unlike
// net.Pipe's, its writes are buffered, as a real socket's are: a server
// that refuses the client's certificate writes its alert while the client
// may still be writing its own flight, which would block both ends of a
// pipe.
func connPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		s, _ := ln.Accept()
		accepted <- s
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		c.Close()
		t.Fatal("accepting the loopback connection failed")
	}
	deadline := time.Now().Add(10 * time.Second)
	c.SetDeadline(deadline)
	s.SetDeadline(deadline)
	return c, s
}

// handshake runs a TLS handshake over a loopback connection and returns
// the client's connection state and the client's and the server's errors.
func handshake(t *testing.T, client, server *tls.Config) (tls.ConnectionState, error, error) {
	c, s := connPair(t)
	defer c.Close()
	defer s.Close()
	errc := make(chan error, 1)
	go func() {
		srv := tls.Server(s, server)
		err := srv.Handshake()
		if err == nil {
			_, err = io.WriteString(srv, "x")
		}
		errc <- err
		s.Close()
	}()
	cl := tls.Client(c, client)
	err := cl.Handshake()
	if err == nil {
		_, err = io.ReadFull(cl, make([]byte, 1))
	}
	st := cl.ConnectionState()
	c.Close()
	return st, err, <-errc
}

func TestMutualTLSBetweenTwoIdentities(t *testing.T) {
	host, err := New()
	if err != nil {
		t.Fatal(err)
	}
	plugin, err := New()
	if err != nil {
		t.Fatal(err)
	}
	hostPeer, err := ParseDER(plugin.DER())
	if err != nil {
		t.Fatal(err)
	}
	pluginPeer, err := ParsePEM(host.PEM())
	if err != nil {
		t.Fatal(err)
	}
	if _, cerr, serr := handshake(t, host.Config(hostPeer), plugin.Config(pluginPeer)); cerr != nil || serr != nil {
		t.Fatalf("handshake: client %v, server %v", cerr, serr)
	}

	// A third party with its own certificate is refused by the plugin.
	stranger, _ := New()
	if _, _, serr := handshake(t, stranger.Config(hostPeer), plugin.Config(pluginPeer)); serr == nil {
		t.Error("plugin accepted a client whose certificate is not the host's")
	}
	// A client without any certificate is refused too.
	noCert := host.Config(hostPeer)
	noCert.Certificates = nil
	if _, _, serr := handshake(t, noCert, plugin.Config(pluginPeer)); serr == nil {
		t.Error("plugin accepted a client without a certificate")
	}
	// The host refuses a server that is not the plugin it launched.
	if _, cerr, _ := handshake(t, host.Config(hostPeer), stranger.Config(pluginPeer)); cerr == nil {
		t.Error("host accepted a server whose certificate is not the plugin's")
	}
}

func TestParseRejectsJunk(t *testing.T) {
	if _, err := ParsePEM([]byte("hello")); !errors.Is(err, ErrNoCertificate) {
		t.Errorf("ParsePEM(junk) = %v", err)
	}
	if _, err := ParsePEM([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")); err == nil {
		t.Error("ParsePEM accepted a broken certificate")
	}
	if _, err := ParseDER([]byte{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "handshake") {
		t.Errorf("ParseDER(junk) = %v", err)
	}
}

func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		if _, err := New(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestKeyExchangeIsX25519: AutoMTLS agrees on X25519 (not Go's default
// hybrid X25519MLKEM768, which costs the cold start ~0.4 ms), also with a
// peer using Go's defaults, as a go-plugin host does, and without a
// HelloRetryRequest round trip.
func TestKeyExchangeIsX25519(t *testing.T) {
	host, _ := New()
	plugin, _ := New()
	hostCfg, pluginCfg := host.Config(plugin.Leaf), plugin.Config(host.Leaf)
	defaults := hostCfg.Clone()
	defaults.CurvePreferences = nil // Go's default key shares, as go-plugin's host sends
	for _, tc := range []struct {
		name           string
		client, server *tls.Config
	}{
		{"automtls both sides", hostCfg, pluginCfg},
		{"default client", defaults, pluginCfg},
	} {
		st, err, serr := handshake(t, tc.client, tc.server)
		if err != nil || serr != nil {
			t.Fatalf("%s: handshake: client %v, server %v", tc.name, err, serr)
		}
		if st.CurveID != tls.X25519 || st.HelloRetryRequest {
			t.Errorf("%s: key exchange %v, HelloRetryRequest %v; want X25519 without a retry", tc.name, st.CurveID, st.HelloRetryRequest)
		}
	}
	// A plugin whose TLS offers P-256 only (gRPC's C core: the Python
	// SDK) still gets a connection, on P-256.
	p256 := pluginCfg.Clone()
	p256.CurvePreferences = []tls.CurveID{tls.CurveP256}
	st, err, serr := handshake(t, hostCfg, p256)
	if err != nil || serr != nil {
		t.Fatalf("P-256-only plugin: handshake: client %v, server %v", err, serr)
	}
	if got := st.CurveID; got != tls.CurveP256 {
		t.Errorf("P-256-only plugin: key exchange %v, want P-256", got)
	}
}
