package listen

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
)

// MaxUnixPath is the longest socket path plugkit creates. The kernel's
// limit is 108 bytes on Linux and 104 on macOS and the BSDs, counting the
// terminating NUL; 103 is safe everywhere.
const MaxUnixPath = 103

// socketName is the socket's name inside its private directory.
const socketName = "plugin.sock"

// PathTooLongError reports a directory in which a socket path would exceed
// the kernel's limit.
type PathTooLongError struct {
	Path string
}

// Error says how long the path is and what to set instead.
func (e *PathTooLongError) Error() string {
	return fmt.Sprintf("unix socket path %q is %d bytes, over the %d-byte limit of unix sockets; set PLUGIN_UNIX_SOCKET_DIR (or TMPDIR) to a shorter directory such as /tmp",
		e.Path, len(e.Path), MaxUnixPath)
}

// UnixConfig says where a unix socket goes.
type UnixConfig struct {
	// Dir is the parent of the private directory. Empty means the
	// temporary directory, and then, when that path is too long for a
	// socket, /tmp. An explicit Dir that is too long is an error.
	Dir string
	// Group, when set, owns the socket (a group name or numeric id), and
	// the socket and its directory become group-accessible.
	Group string
}

// Unix listens on a fresh unix socket in a private directory (mode 0700,
// socket 0600). Closing the listener removes the socket and the directory.
func Unix(cfg UnixConfig) (net.Listener, error) {
	parent := cfg.Dir
	if parent == "" {
		parent = os.TempDir()
		// MkdirTemp adds a dash and up to 20 digits.
		if len(filepath.Join(parent, "plugkit-00000000000000000000", socketName)) > MaxUnixPath {
			parent = "/tmp"
		}
	}
	dir, err := os.MkdirTemp(parent, "plugkit-")
	if err != nil {
		return nil, fmt.Errorf("creating the socket directory: %w", err)
	}
	path := filepath.Join(dir, socketName)
	if len(path) > MaxUnixPath {
		os.Remove(dir)
		return nil, &PathTooLongError{Path: path}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	// The listener must not unlink the socket itself: the wrapper removes
	// the whole directory.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	out := &unixListener{Listener: ln, dir: dir}
	if err := setPermissions(dir, path, cfg.Group); err != nil {
		out.Close()
		return nil, err
	}
	return out, nil
}

func setPermissions(dir, path, group string) error {
	if group == "" {
		return os.Chmod(path, 0o600)
	}
	gid, err := lookupGroup(group)
	if err != nil {
		return err
	}
	for _, p := range []string{dir, path} {
		if err := os.Chown(p, -1, gid); err != nil {
			return fmt.Errorf("giving %s to group %s: %w", p, group, err)
		}
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		return err
	}
	return os.Chmod(path, 0o660)
}

// ShareDir gives dir to group (a name or numeric id) and makes it
// group-writable (0770), so that a plugin running as another user of that
// group can make its socket there, as go-plugin's UnixSocketConfig.Group
// does. The directory is also sticky (as /tmp is), so that the plugin can
// rename or remove only what it made there: not the host's own entries,
// which it could otherwise swap for a symbolic link between the host's
// mkdir and chmod. It fails, saying why, when the group does not exist or
// this process may not give the directory to it.
func ShareDir(dir, group string) error {
	gid, err := lookupGroup(group)
	if err != nil {
		return err
	}
	if err := os.Chown(dir, -1, gid); err != nil {
		return fmt.Errorf("giving %s to group %s: %w (the host must be root or a member of the group)", dir, group, err)
	}
	return os.Chmod(dir, 0o770|os.ModeSticky)
}

func lookupGroup(group string) (int, error) {
	if gid, err := strconv.Atoi(group); err == nil {
		return gid, nil
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return 0, fmt.Errorf("socket group %q (PLUGIN_UNIX_SOCKET_GROUP): %w", group, err)
	}
	return strconv.Atoi(g.Gid)
}

type unixListener struct {
	net.Listener
	dir  string
	once sync.Once
	err  error
}

// Close stops listening and removes the private directory.
func (l *unixListener) Close() error {
	l.once.Do(func() {
		l.err = l.Listener.Close()
		if err := os.RemoveAll(l.dir); err != nil && l.err == nil {
			l.err = err
		}
	})
	return l.err
}

// TCP listens on 127.0.0.1 on the first free port in [minPort, maxPort].
// A zero range lets the kernel choose.
func TCP(minPort, maxPort int) (net.Listener, error) {
	if minPort == 0 && maxPort == 0 {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	if minPort > maxPort {
		return nil, fmt.Errorf("port range %d-%d is empty", minPort, maxPort)
	}
	var last error
	for port := minPort; port <= maxPort; port++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			return ln, nil
		}
		last = err
	}
	return nil, fmt.Errorf("no free TCP port in %d-%d (PLUGIN_MIN_PORT..PLUGIN_MAX_PORT): %w", minPort, maxPort, errors.Unwrap(last))
}

// Dir returns the private directory of a listener made by Unix, or "".
func Dir(ln net.Listener) string {
	if u, ok := ln.(*unixListener); ok {
		return u.dir
	}
	return ""
}
