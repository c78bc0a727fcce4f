//go:build !linux

package host

import (
	"errors"
	"net"
	"net/netip"
)

// socketPeer cannot tell a unix socket's listener without SO_PEERCRED
// (a reattach still checks the socket file's owner).
func socketPeer(net.Conn) (pid, uid int, ok bool) { return 0, 0, false }

func parentOf(int) (int, error) { return 0, errors.New("no /proc") }

// tcpListeners cannot tell who listens on a TCP address without Linux's
// /proc: a TCP reattach is refused unless trusted.
func tcpListeners(netip.AddrPort) ([]tcpListener, error) {
	return nil, errors.New("this system does not say which process listens on a TCP port")
}

func holdsSocket(int, []tcpListener) bool { return false }
