package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/guestcall"
	"github.com/plugkit/plugkit/wire"
)

// ErrMultiplexNotSupported reports a plugin that cannot multiplex its
// broker although Command.MultiplexBroker asked for it.
var ErrMultiplexNotSupported = errors.New("the plugin does not multiplex brokered connections (its handshake has no 7th field, or it says false): rebuild it with plugkit or go-plugin v1.6.0 or later, or leave Command.MultiplexBroker off")

// openMux makes the host's one connection to the plugin with dial and
// starts the multiplexed session on it. The returned dialer opens the main
// gRPC connection's streams in that session.
func (c *Client) openMux(ctx context.Context, dial func(context.Context, string) (net.Conn, error)) (func(context.Context, string) (net.Conn, error), error) {
	raw, err := dial(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("connecting to %s %s: %w", c.line.Network, c.line.Address, err)
	}
	if c.guestCalls {
		// The guest's connection carries unary calls beside the session.
		c.calls = guestcall.NewHost(raw, cmp.Or(c.opts.MaxMessageSize, wire.DefaultMaxMessageSize))
		raw = c.calls.Conn()
	}
	mux, err := brokerwire.DialMux(raw)
	if err != nil {
		raw.Close()
		return nil, err
	}
	c.mux = mux
	return func(context.Context, string) (net.Conn, error) { return mux.Open() }, nil
}

// closeMux ends the multiplexed session, if there is one.
func (c *Client) closeMux() {
	if c.mux != nil {
		c.mux.Close()
	}
}
