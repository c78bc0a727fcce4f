package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/plugkit/plugkit/handshake"
)

// errConnectIdentity is Connect's answer to the zero Security.
var errConnectIdentity = errors.New("host: Connect needs the AutoMTLS identity whose certificate the plugin was given (PLUGIN_CLIENT_CERT): set Options.Security to host.AutoMTLS(id), or to host.Plaintext() or host.TLS(cfg) as the plugin serves")

// Connect connects to a plugin that is already serving and printed
// handshakeLine: one this host did not launch, such as a plugin served
// inside the host's own process by a test harness (package plugintest).
// opts.Security is host.AutoMTLS(id) with the identity whose certificate
// (id.PEM()) the plugin was given as PLUGIN_CLIENT_CERT, host.Plaintext()
// or host.TLS; the zero value, AutoMTLS without an identity, is refused.
//
// The returned Client behaves as a reattached one: Close asks the plugin
// to shut down (the Shutdown RPC) and disconnects, Kill does nothing and
// Exited is never closed. Its Pid is 0: the plugin may well be this very
// process, which nothing should signal on its behalf.
func Connect(ctx context.Context, handshakeLine string, opts Options, a ConnectOptions) (*Client, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	id := opts.Security.id
	if opts.Security.mode == modeAutoMTLS && id == nil {
		return nil, errConnectIdentity
	}
	name := cmp.Or(opts.Name, "in-process plugin")
	line, err := handshake.Parse(strings.TrimRight(handshakeLine, "\r\n"))
	if err != nil {
		return nil, &StartError{Name: name, Err: err}
	}
	if !slices.Contains(opts.Versions, line.AppVersion) {
		return nil, &StartError{Name: name, Err: &handshake.VersionError{Plugin: []int{line.AppVersion}, Host: opts.Versions}}
	}
	tlsConfig, err := clientTLS(id, opts.Security.ownTLS(), line)
	if err != nil {
		return nil, &StartError{Name: name, Err: err}
	}
	c := newClient(opts, name)
	c.attach(a, &attached{stopWait: stopTimeout(a.StopTimeout)})
	c.line = line
	if err := c.connect(ctx, tlsConfig); err != nil {
		return nil, &StartError{Name: name, Err: fmt.Errorf("connecting to the serving plugin: %w", err)}
	}
	c.ready = time.Since(c.started)
	return c, nil
}
