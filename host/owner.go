package host

import (
	"errors"
	"fmt"
	"net/netip"
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
// TF_REATTACH_PROVIDERS, Reattach) naming a socket of another user: a
// unix socket file that belongs to another uid, or a unix socket or TCP
// address on which a process of another uid listens. A configuration read from the environment could otherwise
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

// ErrListenerNotPlugin reports a TCP reattach configuration whose Pid
// does not hold the address's listener: another process listens there
// (the plugin is gone and its port taken). The host does not connect.
var ErrListenerNotPlugin = errors.New("the reattach configuration's process does not listen on its address")

// ErrTCPListenerUnchecked reports a TCP reattach refused because the host
// cannot check who listens on its address: the system does not say (any
// but Linux), or nothing on this machine listens there (a plugin on
// another machine, or one that is gone). ReattachOptions.TrustTCPListener
// lets such a reattach through; a program that sets it from its own
// option (a command-line flag, say) can test for this error with
// errors.Is and name that option.
var ErrTCPListenerUnchecked = errors.New("the TCP reattach's listener cannot be checked")

// tcpListener is a listening TCP socket of this machine: its owner and
// its inode, which names it in a process's fd table.
type tcpListener struct {
	uid   int
	inode string
}

// checkTCPListener refuses a reattach to a TCP address whose listener is
// not this user's or, when pid is not 0, not held by process pid. Where
// the system cannot tell who listens, it refuses too.
func checkTCPListener(address string, pid int) error {
	const trust = "set ReattachOptions.TrustTCPListener to reattach unchecked, only to a plugin you started yourself"
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("the reattach configuration names the TCP address %q, which is no IP address and port (go-plugin writes 127.0.0.1:1234): %w", address, err)
	}
	ls, err := tcpListeners(ap)
	if err != nil {
		return fmt.Errorf("reattach to %s: %w: cannot tell which process listens there (%v), which a TCP reattach is checked against: %s", address, ErrTCPListenerUnchecked, err, trust)
	}
	if len(ls) == 0 {
		return fmt.Errorf("reattach to %s: %w: nothing on this machine listens there; start the plugin again and use its new reattach configuration (a plugin on another machine cannot be checked: %s)", address, ErrTCPListenerUnchecked, trust)
	}
	for _, l := range ls {
		if l.uid != os.Geteuid() {
			return &ForeignSocketError{Address: address, Owner: l.uid, Listener: true, User: os.Geteuid()}
		}
	}
	if pid > 0 && !holdsSocket(pid, ls) {
		return fmt.Errorf("reattach to %s: %w: pid %d does not hold its listener, another process of this user does; start the plugin again and use its new reattach configuration", address, ErrListenerNotPlugin, pid)
	}
	return nil
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
