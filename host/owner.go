package host

import (
	"fmt"
	"os"
	"strings"

	"github.com/plugkit/plugkit/internal/osdep"
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

// checkOwner verifies that owner, the listener of a socket, is the
// plugin process pid or one of its descendants.
func checkOwner(owner int, address string, pid int) error {
	if owner == pid {
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

// ForeignSocketError reports a reattach configuration (PLUGKIT_REATTACH,
// TF_REATTACH_PROVIDERS, Reattach) naming a unix socket of another user:
// the socket file belongs to another uid, or the process listening on it
// runs as one. A configuration read from the environment could otherwise
// hand the host's calls, and whatever they carry, to another user's
// process. The host does not connect.
type ForeignSocketError struct {
	Address string
	// Owner is the socket file's owner or, when Listener is set, the uid
	// of the process that listens on it.
	Owner    int
	Listener bool
	// User is this host's effective uid.
	User int
}

// Error names the socket, its owner and what to do.
func (e *ForeignSocketError) Error() string {
	whose := fmt.Sprintf("belongs to uid %d", e.Owner)
	if e.Listener {
		whose = fmt.Sprintf("is served by a process of uid %d", e.Owner)
	}
	return fmt.Sprintf("the reattach configuration names the socket %s, which %s, not this host's user (uid %d): refused to connect to another user's socket; run the plugin as uid %d (or the host as uid %d), and check where the reattach configuration came from", e.Address, whose, e.User, e.User, e.Owner)
}

// checkSocketFile refuses a reattach to a unix socket file that another
// user owns. An abstract socket (@name) has no file: checkListener's
// look at the listener is all there is. A socket that cannot be looked
// at is left to the dial to report.
func checkSocketFile(address string) error {
	if strings.HasPrefix(address, "@") {
		return nil
	}
	fi, err := os.Stat(address)
	if err != nil {
		return nil
	}
	if owner, ok := osdep.FileOwner(fi); ok && owner != os.Geteuid() {
		return &ForeignSocketError{Address: address, Owner: owner, User: os.Geteuid()}
	}
	return nil
}
