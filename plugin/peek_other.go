//go:build !(linux || darwin || freebsd)

package plugin

import "net"

// hasSent reports whether the client of c has sent bytes the server has
// not read yet: unknown here, so no.
func hasSent(net.Conn) bool { return false }
