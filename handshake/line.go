package handshake

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// CoreVersion is the version of go-plugin's own protocol. Every handshake
// line starts with it; no other value has ever existed.
const CoreVersion = 1

// ProtocolGRPC is the only RPC protocol plugkit speaks.
const ProtocolGRPC = "grpc"

// ProtocolNetRPC is go-plugin's legacy net/rpc protocol, which plugkit
// recognises only to reject with a clear error.
const ProtocolNetRPC = "netrpc"

// maxLineLen bounds the handshake line. A certificate is about 1 KB of
// base64, a socket path at most 108 bytes: 16 KiB is far beyond any honest
// line and keeps a hostile plugin from making the host buffer without end.
const maxLineLen = 16 << 10

// Line is the handshake line a plugin prints on stdout once it listens:
//
//	CORE|APP|NETWORK|ADDRESS|PROTOCOL|SERVERCERT[|MUX]
type Line struct {
	// CoreVersion is go-plugin's protocol version; always CoreVersion.
	CoreVersion int
	// AppVersion is the negotiated app protocol version.
	AppVersion int
	// Network is "unix" or "tcp".
	Network string
	// Address is the socket path or host:port the plugin listens on.
	Address string
	// Protocol is "grpc".
	Protocol string
	// ServerCert is the plugin's AutoMTLS leaf certificate (DER), or nil
	// when the connection is not TLS.
	ServerCert []byte
	// Multiplex reports the 7th field: whether the plugin multiplexes broker
	// connections. It is printed only when HasMultiplex is set, which a
	// plugin does when the host sent PLUGIN_MULTIPLEX_GRPC.
	Multiplex    bool
	HasMultiplex bool
}

// String formats the line without its trailing newline. The certificate
// field is always present, empty when there is no certificate.
func (l Line) String() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(l.CoreVersion))
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(l.AppVersion))
	b.WriteByte('|')
	b.WriteString(l.Network)
	b.WriteByte('|')
	b.WriteString(l.Address)
	b.WriteByte('|')
	b.WriteString(l.Protocol)
	b.WriteByte('|')
	b.WriteString(base64.RawStdEncoding.EncodeToString(l.ServerCert))
	if l.HasMultiplex {
		b.WriteByte('|')
		b.WriteString(strconv.FormatBool(l.Multiplex))
	}
	return b.String()
}

// ErrNetRPC reports a plugin that speaks go-plugin's legacy net/rpc
// protocol, which plugkit does not implement.
var ErrNetRPC = errors.New("plugin speaks go-plugin's net/rpc protocol; plugkit speaks only go-plugin's gRPC protocol: load net/rpc plugins with hashicorp/go-plugin, or rebuild the plugin with a gRPC plugin set (go-plugin's GRPCServer option)")

// LineError reports a handshake line that cannot be used. Field names the
// part that is wrong ("core version", "network", ...).
type LineError struct {
	Line   string
	Field  string
	Reason string
	Err    error
}

// Error names the line (shortened), what is wrong with it and, when Err
// is set, Err's own text (ErrNetRPC says what to do about a net/rpc
// plugin).
func (e *LineError) Error() string {
	line := e.Line
	if len(line) > 200 {
		line = line[:200] + "..."
	}
	msg := fmt.Sprintf("bad handshake line %q: %s", line, e.Reason)
	if e.Field != "" {
		msg = fmt.Sprintf("bad handshake line %q: %s: %s", line, e.Field, e.Reason)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error, such as ErrNetRPC.
func (e *LineError) Unwrap() error { return e.Err }

// Parse reads a handshake line. Surrounding whitespace (the newline, a
// Windows carriage return) is ignored. It checks everything the line alone
// can say: the core version is 1, the protocol is grpc, the network is unix
// or tcp, the certificate field is valid base64. Lines of 5 fields (from
// plugins older than AutoMTLS), 6 and 7 fields are accepted.
func Parse(s string) (Line, error) {
	raw := s
	s = strings.TrimSpace(s)
	bad := func(field, reason string, err error) (Line, error) {
		return Line{}, &LineError{Line: raw, Field: field, Reason: reason, Err: err}
	}
	if len(s) > maxLineLen {
		return bad("", fmt.Sprintf("%d bytes long, more than the %d a handshake can be", len(s), maxLineLen), nil)
	}
	if s == "" {
		return bad("", "the line is empty; a plugin prints CORE|APP|NETWORK|ADDRESS|PROTOCOL|CERT", nil)
	}
	parts := strings.Split(s, "|")
	if len(parts) < 4 {
		return bad("", fmt.Sprintf("%d fields, want 6 (CORE|APP|NETWORK|ADDRESS|PROTOCOL|CERT); is this a go-plugin plugin?", len(parts)), nil)
	}
	if len(parts) > 7 {
		return bad("", fmt.Sprintf("%d fields, want 6 or 7", len(parts)), nil)
	}
	var l Line
	core, err := strconv.Atoi(parts[0])
	if err != nil {
		return bad("core version", fmt.Sprintf("%q is not a number", parts[0]), nil)
	}
	if core != CoreVersion {
		return bad("core version", fmt.Sprintf("%d, but only %d exists; the plugin was built with an incompatible plugin library", core, CoreVersion), nil)
	}
	l.CoreVersion = core
	app, err := strconv.Atoi(parts[1])
	if err != nil || app < 0 {
		return bad("app protocol version", fmt.Sprintf("%q is not a version number", parts[1]), nil)
	}
	l.AppVersion = app
	switch parts[2] {
	case "unix", "tcp":
		l.Network = parts[2]
	default:
		return bad("network", fmt.Sprintf("%q; plugkit connects over unix or tcp", parts[2]), nil)
	}
	if parts[3] == "" {
		return bad("address", "empty", nil)
	}
	l.Address = parts[3]
	if len(parts) == 4 {
		return bad("protocol", "missing, which means netrpc", ErrNetRPC)
	}
	switch parts[4] {
	case ProtocolGRPC:
		l.Protocol = ProtocolGRPC
	case ProtocolNetRPC:
		return bad("protocol", "netrpc", ErrNetRPC)
	default:
		return bad("protocol", fmt.Sprintf("%q; plugkit speaks grpc", parts[4]), nil)
	}
	if len(parts) >= 6 && parts[5] != "" {
		// go-plugin prints the DER without padding; be lenient with padding.
		cert, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(parts[5], "="))
		if err != nil {
			return bad("server certificate", "not base64 (go-plugin prints DER in unpadded standard base64)", err)
		}
		if len(cert) > 0 {
			l.ServerCert = cert
		}
	}
	if len(parts) == 7 {
		mux, err := strconv.ParseBool(parts[6])
		if err != nil {
			return bad("multiplex", fmt.Sprintf("%q is not true or false", parts[6]), nil)
		}
		l.Multiplex, l.HasMultiplex = mux, true
	}
	return l, nil
}
