package host

import (
	"fmt"
	"net"
)

// OwnerError reports a handshake that names a unix socket the plugin does
// not serve: another process listens there (another plugin's socket, say).
// The host neither connects to it nor shuts it down nor removes it.
type OwnerError struct {
	Address    string
	Owner, Pid int
}

// Error names the socket, its owner and the plugin.
func (e *OwnerError) Error() string {
	return fmt.Sprintf("the handshake names %s, which process %d serves, not the plugin (pid %d) or a process it started: refused to use it", e.Address, e.Owner, e.Pid)
}

// checkOwner verifies that conn's listener is the plugin process pid or
// one of its descendants. Where the system cannot tell, it passes.
func checkOwner(conn net.Conn, address string, pid int) error {
	owner, ok := socketOwner(conn)
	if !ok || owner == pid {
		return nil
	}
	for p, hops := owner, 0; p > 1 && hops < 64; hops++ {
		parent, err := parentOf(p)
		if err != nil {
			break
		}
		if parent == pid {
			return nil
		}
		p = parent
	}
	return &OwnerError{Address: address, Owner: owner, Pid: pid}
}
