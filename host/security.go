package host

import (
	"crypto/tls"
	"errors"

	"github.com/plugkit/plugkit/automtls"
)

// securityMode is which of Security's three settings is chosen.
type securityMode int

const (
	modeAutoMTLS  securityMode = iota // the zero value
	modeTLS                           // the host's own TLS
	modePlaintext                     // no TLS
)

// Security is how a host secures its connection to a plugin (Options.Security):
// AutoMTLS, the host's own TLS (TLS) or plain text (Plaintext). The zero
// value is AutoMTLS with a fresh identity, which each entry point reads as
// its default:
//
//   - Start: AutoMTLS; the host and the plugin each make a throwaway
//     certificate and accept only each other.
//   - Connect: AutoMTLS with the identity given by AutoMTLS(id), whose
//     certificate the plugin was given; the zero value, which has none,
//     is refused.
//   - Reattach: plain text, as Terraform's reattach is (the reattach
//     configuration carries no certificate); AutoMTLS(id) is refused.
//   - Dial: refused; a plugin service needs TLS, or Plaintext on
//     loopback.
type Security struct {
	mode securityMode
	tls  *tls.Config
	id   *automtls.Identity
}

// AutoMTLS returns the AutoMTLS setting with the host's identity id: its
// certificate (id.PEM()) is what the plugin accepts, given to it as
// PLUGIN_CLIENT_CERT. Nil means a fresh identity for each Start, as the
// zero Security. Connect needs it: the plugin it connects to was given the
// certificate by whoever started it (plugintest, say).
func AutoMTLS(id *automtls.Identity) Security {
	return Security{mode: modeAutoMTLS, id: id}
}

// TLS returns the setting for teams with their own PKI: connect with cfg
// instead of AutoMTLS (go-plugin's ClientConfig.TLSConfig). A launched
// plugin serves its own certificate (plugin.Config.TLSProvider) and the
// host asks it for no AutoMTLS. Set RootCAs to the plugin's CA,
// Certificates to the host's own certificate if the plugin requires one
// (a plugin service, Dial, does), and ServerName to a name in the plugin's
// certificate (for Dial, empty checks each endpoint's own name). The
// broker uses it both ways, as go-plugin's does.
func TLS(cfg *tls.Config) Security {
	return Security{mode: modeTLS, tls: cfg}
}

// Plaintext returns the setting that turns TLS off (go-plugin's
// ClientConfig.AutoMTLS false). Dial allows it only when every endpoint is
// a loopback address; Start warns when such a plugin listens on TCP, where
// every local user can reach it.
func Plaintext() Security {
	return Security{mode: modePlaintext}
}

func (s Security) check() error {
	if s.mode == modeTLS && s.tls == nil {
		return errors.New("host: Options.Security is host.TLS(nil): give the TLS configuration, or use host.AutoMTLS or host.Plaintext")
	}
	return nil
}

// ownTLS returns a copy of the host's own TLS configuration, or nil.
func (s Security) ownTLS() *tls.Config {
	if s.tls == nil {
		return nil
	}
	return s.tls.Clone()
}
