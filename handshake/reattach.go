package handshake

import (
	"encoding/json"
	"fmt"
)

// Reattach describes a running plugin a host can connect to without
// launching it, in the JSON form of go-plugin's ReattachConfig as
// Terraform's TF_REATTACH_PROVIDERS writes it:
//
//	{"Protocol":"grpc","ProtocolVersion":6,"Pid":123,"Test":true,
//	 "Addr":{"Network":"unix","String":"/tmp/plugin..."}}
//
// A plugin in debug mode prints it (plugin.DebugLine) and a host reads it
// (host.Reattach). It carries no certificate: a reattached connection is
// plain text or uses the host's own TLS, never AutoMTLS.
type Reattach struct {
	// Protocol is "grpc" (ProtocolGRPC); empty is read as "grpc".
	Protocol string `json:"Protocol"`
	// ProtocolVersion is the app protocol version the plugin serves.
	ProtocolVersion int `json:"ProtocolVersion"`
	// Pid is the plugin's process ID; 0 when unknown.
	Pid int `json:"Pid"`
	// Test is set by a plugin in debug mode: it was not started by its
	// host, and a host leaves it running when it disconnects.
	Test bool `json:"Test"`
	// Addr is where the plugin listens.
	Addr ReattachAddr `json:"Addr"`
}

// ReattachAddr is where a reattachable plugin listens: Network "unix" or
// "tcp" and String the socket path or host:port (net.Addr's two methods).
type ReattachAddr struct {
	Network string `json:"Network"`
	String  string `json:"String"`
}

// reattachWant shows the form ParseReattach reads, for its errors.
const reattachWant = `(want {"NAME":{"Protocol":"grpc","ProtocolVersion":6,"Pid":123,"Addr":{"Network":"unix","String":"/path"}}})`

// ParseReattach reads a TF_REATTACH_PROVIDERS-style object: plugin names
// (provider addresses, for Terraform) mapped to Reattach values.
func ParseReattach(data []byte) (map[string]Reattach, error) {
	var out map[string]Reattach
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("reattach configuration: %w %s", err, reattachWant)
	}
	if out == nil {
		// JSON's null decodes into no map and no error.
		return nil, fmt.Errorf("reattach configuration: null is not an object %s", reattachWant)
	}
	return out, nil
}

// ReattachJSON returns the JSON object mapping name to r, the form
// ParseReattach reads: the value of PLUGKIT_REATTACH and of Terraform's
// TF_REATTACH_PROVIDERS.
func ReattachJSON(name string, r Reattach) (string, error) {
	b, err := json.Marshal(map[string]Reattach{name: r})
	if err != nil {
		return "", fmt.Errorf("handshake: encoding the reattach configuration: %w", err)
	}
	return string(b), nil
}
