package host

import (
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/plugkit/plugkit/internal/osdep"
)

// OwnerError refuses a socket that is not the plugin's to use; the host
// neither connects to it nor shuts it down nor removes it. It reports a
// launched plugin's handshake naming a unix socket another process
// serves (another plugin's socket, say), and a reattach configuration
// (PLUGKIT_REATTACH, TF_REATTACH_PROVIDERS, Reattach) naming a socket of
// another user, a TCP listener its Pid does not hold, or a TCP listener
// that cannot be checked. A configuration read from the environment could
// otherwise hand the host's calls, and whatever they carry, to another
// process.
type OwnerError struct {
	// Address is the socket: a unix socket's path or a TCP address.
	Address string
	// Pid is the plugin's process: the one launched, or the reattach
	// configuration's Pid.
	Pid int
	// OwnerPid is the process that serves a handshake's socket instead
	// of the plugin; 0 when not known.
	OwnerPid int
	// Foreign says the socket is another user's: OwnerUID owns the
	// socket file or, when Listener is set, runs the process that
	// listens on it. User is this host's effective uid.
	Foreign        bool
	OwnerUID, User int
	Listener       bool
	// Unchecked says who listens on a TCP address cannot be checked:
	// the system does not say (any but Linux), or nothing on this
	// machine listens there (a plugin on another machine, or one that
	// is gone). ReattachOptions.TrustTCPListener lets such a reattach
	// through; a program that sets it from its own option (a
	// command-line flag, say) can look for it with errors.As and name
	// that option.
	Unchecked bool
	// why is what an Unchecked check found.
	why string
}

// Error names the socket, who holds it and what to do.
func (e *OwnerError) Error() string {
	switch {
	case e.Unchecked:
		return fmt.Sprintf("reattach to %s: the TCP reattach's listener cannot be checked: %s", e.Address, e.why)
	case e.Foreign:
		whose := fmt.Sprintf("belongs to uid %d", e.OwnerUID)
		if e.Listener {
			whose = fmt.Sprintf("is served by a process of uid %d", e.OwnerUID)
		}
		return fmt.Sprintf("the reattach configuration names the socket %s, which %s, not this host's user (uid %d): refused to connect to another user's socket; run the plugin as uid %d (or the host as uid %d), and check where the reattach configuration came from", e.Address, whose, e.User, e.User, e.OwnerUID)
	case e.OwnerPid != 0:
		return fmt.Sprintf("the handshake names %s, which process %d serves, not the plugin (pid %d) or a process it started: refused to use it", e.Address, e.OwnerPid, e.Pid)
	default:
		return fmt.Sprintf("reattach to %s: the reattach configuration's process does not listen on its address: pid %d does not hold its listener, another process of this user does; start the plugin again and use its new reattach configuration", e.Address, e.Pid)
	}
}

// foreignSocket is the OwnerError for a socket of uid owner; listener
// says owner runs its listener rather than owns its file.
func foreignSocket(address string, owner int, listener bool) *OwnerError {
	return &OwnerError{Address: address, Foreign: true, OwnerUID: owner, Listener: listener, User: os.Geteuid()}
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
	return &OwnerError{Address: address, OwnerPid: owner, Pid: pid}
}

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
		return &OwnerError{Address: address, Unchecked: true, why: fmt.Sprintf("cannot tell which process listens there (%v), which a TCP reattach is checked against: %s", err, trust)}
	}
	if len(ls) == 0 {
		return &OwnerError{Address: address, Unchecked: true, why: fmt.Sprintf("nothing on this machine listens there; start the plugin again and use its new reattach configuration (a plugin on another machine cannot be checked: %s)", trust)}
	}
	for _, l := range ls {
		if l.uid != os.Geteuid() {
			return foreignSocket(address, l.uid, true)
		}
	}
	if pid > 0 && !holdsSocket(pid, ls) {
		return &OwnerError{Address: address, Pid: pid}
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
		return foreignSocket(address, owner, false)
	}
	return nil
}
