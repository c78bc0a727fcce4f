package listen

import (
	"net"

	"github.com/plugkit/plugkit/internal/osdep"
)

// Network returns the network a plugin or broker listens on, given the
// host's request (PLUGIN_NETWORK: "tcp", "unix" or empty): "tcp" when the
// host asks for it or when the system's plugins do not use unix sockets
// (Windows, where go-plugin plugins listen on loopback TCP too), else
// "unix".
func Network(requested string) string { return network(requested, osdep.UnixSockets) }

// network is Network's decision with the system's fact as an argument.
func network(requested string, unixSockets bool) string {
	if requested == "tcp" || !unixSockets {
		return "tcp"
	}
	return "unix"
}

// Local listens where this system's plugins do: on a unix socket as Unix
// does, or, where plugins use TCP (Windows), on a loopback port the kernel
// chooses.
func Local(cfg UnixConfig) (net.Listener, error) {
	if Network("") == "tcp" {
		return TCP(0, 0)
	}
	return Unix(cfg)
}
