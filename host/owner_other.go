//go:build !linux

package host

import (
	"errors"
	"net"
)

// socketOwner cannot tell a unix socket's owner without SO_PEERCRED.
func socketOwner(net.Conn) (int, bool) { return 0, false }

// socketUser cannot tell a unix socket's listener without SO_PEERCRED
// (the socket file's owner is still checked).
func socketUser(net.Conn) (int, bool) { return 0, false }

func parentOf(int) (int, error) { return 0, errors.New("no /proc") }
