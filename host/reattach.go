package host

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/plugkit/plugkit/handshake"
)

// ReattachConfig describes a running plugin, in the JSON form of
// Terraform's TF_REATTACH_PROVIDERS:
//
//	{"Protocol":"grpc","ProtocolVersion":6,"Pid":123,"Test":true,
//	 "Addr":{"Network":"unix","String":"/tmp/plugin..."}}
type ReattachConfig struct {
	Protocol        string       `json:"Protocol"`
	ProtocolVersion int          `json:"ProtocolVersion"`
	Pid             int          `json:"Pid"`
	Test            bool         `json:"Test"`
	Addr            ReattachAddr `json:"Addr"`
}

// ReattachAddr is where a reattachable plugin listens.
type ReattachAddr struct {
	Network string `json:"Network"`
	String  string `json:"String"`
}

// ParseReattach reads a TF_REATTACH_PROVIDERS-style object: plugin names
// (provider addresses, for Terraform) mapped to ReattachConfigs.
func ParseReattach(data []byte) (map[string]ReattachConfig, error) {
	const want = `(want {"NAME":{"Protocol":"grpc","ProtocolVersion":6,"Pid":123,"Addr":{"Network":"unix","String":"/path"}}})`
	var out map[string]ReattachConfig
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("reattach configuration: %w %s", err, want)
	}
	if out == nil {
		// JSON's null decodes into no map and no error.
		return nil, fmt.Errorf("reattach configuration: null is not an object %s", want)
	}
	return out, nil
}

// ErrPluginGone reports a reattach to a process that no longer exists.
var ErrPluginGone = errors.New("no process has that pid any more")

// Reattach connects to a plugin that is already running (started by a
// debugger, a test, or an earlier host). cfg supplies the host's Versions,
// Logger and the like; its Path, Cookie and AutoMTLS settings are not used:
// reattached connections are plain text, as Terraform's are, unless
// cfg.TLS is set (a plugin serving its own TLS). Unlike
// go-plugin (issue 310), the plugin's protocol version is checked against
// cfg.Versions. A unix socket must be this user's: a socket file of another
// uid, or (on Linux) a listener running as one, is refused with a
// *ForeignSocketError before any call reaches it, since a reattach
// configuration usually comes from the environment.
func Reattach(ctx context.Context, rc ReattachConfig, cfg Config) (*Client, error) {
	name := cfg.Name
	if name == "" {
		name = fmt.Sprintf("pid %d", rc.Pid)
	}
	if err := checkVersions(cfg.Versions); err != nil {
		return nil, err
	}
	if cfg.MultiplexBroker {
		return nil, errMultiplexReattach
	}
	if rc.Protocol != "" && rc.Protocol != handshake.ProtocolGRPC {
		return nil, &StartError{Name: name, Err: fmt.Errorf("reattach protocol %q: %w", rc.Protocol, handshake.ErrNetRPC)}
	}
	if rc.Addr.Network != "unix" && rc.Addr.Network != "tcp" {
		return nil, &StartError{Name: name, Err: fmt.Errorf("reattach network %q: want unix or tcp", rc.Addr.Network)}
	}
	if rc.ProtocolVersion == 0 {
		// go-plugin's Client.ReattachConfig leaves it out.
		return nil, &StartError{Name: name, Err: errors.New("reattach configuration has no ProtocolVersion (go-plugin's Client.ReattachConfig omits it): set it to the app protocol version the plugin serves (go-plugin: Client.NegotiatedVersion)")}
	}
	if !slices.Contains(cfg.Versions, rc.ProtocolVersion) {
		return nil, &StartError{Name: name, Err: &handshake.VersionError{Plugin: []int{rc.ProtocolVersion}, Host: cfg.Versions}}
	}
	if rc.Addr.Network == "unix" {
		if err := checkSocketFile(rc.Addr.String); err != nil {
			return nil, &StartError{Name: name, Err: err}
		}
	}
	if rc.Pid > 0 && !alive(rc.Pid) {
		return nil, &StartError{Name: name, Err: fmt.Errorf("reattach to pid %d: %w; start the plugin again and use its new reattach configuration", rc.Pid, ErrPluginGone)}
	}
	c := &Client{
		cfg:     cfg,
		name:    name,
		logger:  cfg.logger().With("plugin", name),
		started: time.Now(),
		pid:     rc.Pid,
		debug:   rc.Test,
		// The listener's uid is checked too (Linux): the socket file
		// may have been handed over to this user.
		sameUser: true,
		line: handshake.Line{
			CoreVersion: handshake.CoreVersion,
			AppVersion:  rc.ProtocolVersion,
			Network:     rc.Addr.Network,
			Address:     rc.Addr.String,
			Protocol:    handshake.ProtocolGRPC,
		},
	}
	var tlsConfig *tls.Config
	if cfg.TLS != nil {
		tlsConfig = cfg.TLS.Clone()
	}
	if err := c.connect(ctx, tlsConfig); err != nil {
		return nil, &StartError{Name: name, Err: err}
	}
	c.ready = time.Since(c.started)
	return c, nil
}
