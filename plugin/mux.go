package plugin

import (
	"errors"
	"net"

	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/brokerwire"
)

// multiplex returns the listener the main gRPC server serves on: ln
// itself, or, when the host asked for broker multiplexing, the main
// listener of a multiplexed connection that takes the host's one connection on ln and
// also carries every brokered connection.
func multiplex(ln net.Listener, env handshake.Env) (net.Listener, brokerwire.Mux) {
	if !env.Multiplex {
		return ln, nil
	}
	mux := brokerwire.ListenMux(ln)
	return mux.Main(), mux
}

// hungUp reports a server that stopped because its host closed the
// multiplexed connection, which ends a plugin like a Shutdown.
func hungUp(err error, mux brokerwire.Mux) bool {
	return mux != nil && errors.Is(err, broker.ErrMuxEnded)
}
