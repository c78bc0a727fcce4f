package automtls

import (
	"bytes"
	"encoding/pem"
	"errors"
	"testing"

	plugkithandshake "github.com/plugkit/plugkit/handshake"
)

// FuzzParsePEM feeds ParsePEM what a host puts in PLUGIN_CLIENT_CERT.
// Properties: a certificate or an error, never both or neither; the
// certificate is the first CERTIFICATE block's; without such a block the
// error is ErrNoCertificate, and only then.
func FuzzParsePEM(f *testing.F) {
	id, err := New()
	if err != nil {
		f.Fatal(err)
	}
	key := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte{1, 2, 3}})
	for _, s := range [][]byte{id.PEM(), append(key, id.PEM()...), key, nil, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
		[]byte("-----BEGIN CERTIFICATE-----\n"), append(id.PEM()[:40], id.PEM()[60:]...)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cert, err := ParsePEM(data)
		if (cert == nil) == (err == nil) {
			t.Fatalf("ParsePEM(%q) = %v, %v: want a certificate or an error", data, cert, err)
		}
		var first *pem.Block
		for rest := data; first == nil; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type == "CERTIFICATE" {
				first = b
			}
		}
		if errors.Is(err, ErrNoCertificate) != (first == nil) {
			t.Fatalf("ParsePEM(%q): %v, but a CERTIFICATE block is there: %v", data, err, first != nil)
		}
		if cert != nil && !bytes.Equal(cert.Raw, first.Bytes) {
			t.Fatalf("ParsePEM(%q) read a certificate that is not the first CERTIFICATE block", data)
		}
	})
}

// FuzzParseDER feeds ParseDER the certificate a plugin's handshake line
// carries. Properties: a certificate or an error; what it reads, carried
// in a handshake line again, reads back as the same certificate.
func FuzzParseDER(f *testing.F) {
	id, err := New()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(id.DER())
	f.Add(id.DER()[:len(id.DER())-1])
	f.Add([]byte{0x30, 0x03, 0x02, 0x01, 0x00})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, der []byte) {
		cert, err := ParseDER(der)
		if (cert == nil) == (err == nil) {
			t.Fatalf("ParseDER(%x) = %v, %v: want a certificate or an error", der, cert, err)
		}
		if err != nil {
			return
		}
		line := plugkithandshake.Line{CoreVersion: plugkithandshake.CoreVersion, AppVersion: 1, Network: "unix", Address: "/tmp/p.sock",
			Protocol: plugkithandshake.ProtocolGRPC, ServerCert: cert.Raw}
		l, err := plugkithandshake.Parse(line.String() + "\n")
		if err != nil {
			t.Fatalf("the handshake line %q carrying the certificate does not parse: %v", line.String(), err)
		}
		again, err := ParseDER(l.ServerCert)
		if err != nil || !again.Equal(cert) {
			t.Fatalf("the certificate read from %x, carried in a handshake line, reads back as %v, %v", der, again, err)
		}
	})
}
