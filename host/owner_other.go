//go:build !linux

package host

import (
	"errors"
	"net"
)

// socketPeer cannot tell a unix socket's listener without SO_PEERCRED
// (a reattach still checks the socket file's owner).
func socketPeer(net.Conn) (pid, uid int, ok bool) { return 0, 0, false }

func parentOf(int) (int, error) { return 0, errors.New("no /proc") }
