package automtls

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
)

// handshake runs a TLS handshake over an in-memory pipe and returns the
// client's and the server's errors.
func handshake(client, server *tls.Config) (error, error) {
	c, s := net.Pipe()
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
	c.Close()
	return err, <-errc
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
	if cerr, serr := handshake(host.Config(hostPeer), plugin.Config(pluginPeer)); cerr != nil || serr != nil {
		t.Fatalf("handshake: client %v, server %v", cerr, serr)
	}

	// A third party with its own certificate is refused by the plugin.
	stranger, _ := New()
	if _, serr := handshake(stranger.Config(hostPeer), plugin.Config(pluginPeer)); serr == nil {
		t.Error("plugin accepted a client whose certificate is not the host's")
	}
	// A client without any certificate is refused too.
	noCert := host.Config(hostPeer)
	noCert.Certificates = nil
	if _, serr := handshake(noCert, plugin.Config(pluginPeer)); serr == nil {
		t.Error("plugin accepted a client without a certificate")
	}
	// The host refuses a server that is not the plugin it launched.
	if cerr, _ := handshake(host.Config(hostPeer), stranger.Config(pluginPeer)); cerr == nil {
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
