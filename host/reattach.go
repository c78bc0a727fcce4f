package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/plugkit/plugkit/handshake"
)

// ErrPluginGone reports a reattach to a process that no longer exists.
var ErrPluginGone = errors.New("no process has that pid any more")

// Reattach connects to a plugin that is already running (started by a
// debugger, a test, or an earlier host), as r describes it (go-plugin's
// ClientConfig.Reattach). The zero opts.Security is plain text, as
// Terraform's reattach is: r carries no certificate, so host.AutoMTLS is
// refused; host.TLS connects to a plugin serving its own TLS. Unlike
// go-plugin (issue 310), the plugin's protocol version is checked against
// opts.Versions. A unix socket must be this user's: a socket file of
// another uid, or (on Linux) a listener running as one, is refused with a
// *OwnerError (Foreign) before any call reaches it, since a reattach
// configuration usually comes from the environment. So must a TCP
// listener (on Linux, from /proc), and a configuration's Pid must hold it
// (an *OwnerError too); where that cannot be checked (other systems, a
// plugin on another machine) a TCP reattach is refused (Unchecked) unless
// ro.TrustTCPListener is set.
func Reattach(ctx context.Context, r handshake.Reattach, opts Options, ro ReattachOptions) (*Client, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if opts.Security.mode == modeAutoMTLS && opts.Security.id != nil {
		return nil, errors.New("host: Reattach cannot use AutoMTLS (a reattach configuration carries no certificate): leave Options.Security zero for plain text, or set host.TLS for a plugin serving its own TLS")
	}
	name := cmp.Or(opts.Name, fmt.Sprintf("pid %d", r.Pid))
	if err := checkReattach(r, opts.Versions, ro.TrustTCPListener); err != nil {
		return nil, &StartError{Name: name, Err: err}
	}
	c := newClient(opts, name)
	c.attach(ro.ConnectOptions, &attached{
		pidNum:   r.Pid,
		stopWait: stopTimeout(ro.StopTimeout),
		leave:    r.Test && !ro.StopDebugPlugins,
		// The listener's uid is checked too (Linux): the socket file
		// may have been handed over to this user.
		sameUser: true,
	})
	if r.Addr.Network == "tcp" && !ro.TrustTCPListener {
		// Checked again at each connection, once it is made: a
		// listener that took the port since is refused too.
		c.rawDial = func(ctx context.Context, _ string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", r.Addr.String)
			if err == nil {
				if err = checkTCPListener(r.Addr.String, r.Pid); err != nil {
					conn.Close()
					return nil, err
				}
			}
			return conn, err
		}
	}
	c.line = handshake.Line{
		CoreVersion: handshake.CoreVersion,
		AppVersion:  r.ProtocolVersion,
		Network:     r.Addr.Network,
		Address:     r.Addr.String,
		Protocol:    handshake.ProtocolGRPC,
	}
	if err := c.connect(ctx, opts.Security.ownTLS()); err != nil {
		return nil, &StartError{Name: name, Err: err}
	}
	c.ready = time.Since(c.started)
	return c, nil
}

// checkReattach checks a reattach configuration against the host's
// versions, and that its process is alive and its socket this user's
// (for TCP, unless trustTCP).
func checkReattach(r handshake.Reattach, versions []int, trustTCP bool) error {
	if r.Protocol != "" && r.Protocol != handshake.ProtocolGRPC {
		return fmt.Errorf("reattach protocol %q: %w", r.Protocol, handshake.ErrNetRPC)
	}
	if r.Addr.Network != "unix" && r.Addr.Network != "tcp" {
		return fmt.Errorf("reattach network %q: want unix or tcp", r.Addr.Network)
	}
	if r.ProtocolVersion == 0 {
		// go-plugin's Client.ReattachConfig leaves it out.
		return errors.New("reattach configuration has no ProtocolVersion (go-plugin's Client.ReattachConfig omits it): set it to the app protocol version the plugin serves (go-plugin: Client.NegotiatedVersion)")
	}
	if !slices.Contains(versions, r.ProtocolVersion) {
		return &handshake.VersionError{Plugin: []int{r.ProtocolVersion}, Host: versions}
	}
	if r.Addr.Network == "unix" {
		if err := checkSocketFile(r.Addr.String); err != nil {
			return err
		}
	}
	if r.Addr.Network == "tcp" && !trustTCP {
		if err := checkTCPListener(r.Addr.String, r.Pid); err != nil {
			return err
		}
	}
	if r.Pid > 0 && !alive(r.Pid) {
		return fmt.Errorf("reattach to pid %d: %w; start the plugin again and use its new reattach configuration", r.Pid, ErrPluginGone)
	}
	return nil
}

// attach makes c a Client of a plugin it did not launch.
func (c *Client) attach(a ConnectOptions, life *attached) {
	c.life = life
	c.brokerDir, c.brokerGroup = a.UnixSocketDir, a.UnixSocketGroup
	c.syncStdout, c.syncStderr = a.SyncStdout, a.SyncStderr
}
