package host

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/plugkit/plugkit/automtls"
	"github.com/plugkit/plugkit/handshake"
)

// Connect connects to a plugin that is already serving and printed
// handshakeLine: one this host did not launch, such as a plugin served
// inside the host's own process by a test harness (package plugintest).
// id is the AutoMTLS identity whose certificate (id.PEM()) the plugin was
// given as PLUGIN_CLIENT_CERT; nil means plain text, or cfg.TLS when set.
// cfg supplies Versions (required), Name, Logger, UnixSocketDir (for the
// broker's sockets), MaxMessageSize, StopTimeout and DialOptions; Path and
// Cookie are not used.
//
// The returned Client behaves as a reattached one: Close asks the plugin
// to shut down (the Shutdown RPC) and disconnects, Kill does nothing and
// Exited is never closed. Its Pid is 0: the plugin may well be this very
// process, which nothing should signal on its behalf.
func Connect(ctx context.Context, handshakeLine string, id *automtls.Identity, cfg Config) (*Client, error) {
	name := cfg.Name
	if name == "" {
		name = "in-process plugin"
	}
	if err := checkVersions(cfg.Versions); err != nil {
		return nil, err
	}
	line, err := handshake.Parse(strings.TrimRight(handshakeLine, "\r\n"))
	if err != nil {
		return nil, &StartError{Name: name, Err: err}
	}
	if !slices.Contains(cfg.Versions, line.AppVersion) {
		return nil, &StartError{Name: name, Err: &handshake.VersionError{Plugin: []int{line.AppVersion}, Host: cfg.Versions}}
	}
	tlsConfig, err := clientTLS(id, cfg.TLS, line)
	if err != nil {
		return nil, &StartError{Name: name, Err: err}
	}
	c := &Client{
		cfg:     cfg,
		name:    name,
		logger:  cfg.logger().With("plugin", name),
		started: time.Now(),
		line:    line,
	}
	if err := c.connect(ctx, tlsConfig); err != nil {
		return nil, &StartError{Name: name, Err: fmt.Errorf("connecting to the serving plugin: %w", err)}
	}
	c.ready = time.Since(c.started)
	return c, nil
}
