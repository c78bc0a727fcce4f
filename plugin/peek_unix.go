//go:build linux || darwin || freebsd

package plugin

import (
	"net"
	"syscall"
)

// hasSent reports whether the client of c has sent bytes the server has
// not read yet, without reading them: a TCP connection's receive queue,
// peeked at.
func hasSent(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	var b [1]byte
	if err := rc.Control(func(fd uintptr) {
		n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}); err != nil {
		return false
	}
	return n > 0
}
