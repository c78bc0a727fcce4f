package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/plugkit/plugkit/internal/listen"
	"github.com/plugkit/plugkit/internal/osdep"
)

// A host gives each plugin it launches a private directory of its own,
// named plugkit-host-*, as PLUGIN_UNIX_SOCKET_DIR: plugkit plugins and
// go-plugin plugins from v1.5 on make their sockets there, and so do the
// host's brokered servers. The host removes the whole directory after it
// reaped the plugin, whatever the plugin did (a version rejection, a crash,
// SIGKILL, a go-plugin plugin that never removes its socket). A host that
// was itself SIGKILLed cannot; the next host sweeps such directories: each
// holds an .owner file its host keeps flock()ed while it lives, so a
// directory whose lock can be taken has lost its owner.

const (
	// hostDirPrefix names the private directories.
	hostDirPrefix = "plugkit-host-"
	// ownerFile is the lock file inside one.
	ownerFile = ".owner"
	// nestedSocket is the path a plugkit plugin makes inside the
	// directory: its own private directory and socket.
	nestedSocket = "/plugkit-0000000000/plugin.sock"
)

// sockDir is a plugin's private directory and the lock that marks it as
// owned by a live host.
type sockDir struct {
	path string
	lock *os.File
	// out is the write end of the plugin's stdout pipe when the lock is
	// that pipe's read end (ownerFIFO), until the launch takes it.
	out *os.File
}

var sweptDirs sync.Map // parent directory -> struct{}: swept once per process

// newSockDir makes a private directory for one plugin under parent (the
// temporary directory when empty, or /tmp when that path is too long for
// a socket), after sweeping parent, once per process, of the directories
// of dead hosts.
func newSockDir(parent string) (*sockDir, error) {
	if !osdep.UnixSockets {
		// Windows: plugins and brokers listen on loopback TCP, so there
		// is no socket to give a directory; the zero sockDir names none.
		return &sockDir{}, nil
	}
	if parent == "" {
		parent = os.TempDir()
		if len(filepath.Join(parent, hostDirPrefix+"0000000000")+nestedSocket) > listen.MaxUnixPath {
			parent = "/tmp"
		}
	}
	// An explicit parent too long for a socket inside is left to the
	// plugin, which says so in its own words (PathTooLongError for
	// plugkit plugins).
	if _, done := sweptDirs.LoadOrStore(parent, struct{}{}); !done {
		sweepDeadHostDirs(parent)
	}
	dir, err := os.MkdirTemp(parent, hostDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("creating the plugin's socket directory: %w", err)
	}
	// Lock under a temporary name, then rename: a sweeper only looks at
	// ownerFile, so it never sees the file before it is locked.
	tmp := filepath.Join(dir, ownerFile+".new")
	d := &sockDir{path: dir}
	d.lock, d.out, err = ownerFIFO(tmp)
	if err != nil {
		d.lock, err = lockFile(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, ownerFile))
	}
	if err != nil {
		d.remove()
		return nil, fmt.Errorf("locking the plugin's socket directory %s: %w", dir, err)
	}
	return d, nil
}

// lockFile creates path and flock()s it.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := osdep.TryLock(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// stdout hands the launch the pipe for the plugin's standard output when
// the lock is that pipe's read end: the read end r stays the directory's
// (remove closes it, and with it the lock), the write end w is the
// caller's, to give to the plugin and close. Both are nil otherwise.
func (d *sockDir) stdout() (r, w *os.File) {
	if d == nil || d.out == nil {
		return nil, nil
	}
	w, d.out = d.out, nil
	return d.lock, w
}

// remove deletes the directory and everything in it, then drops the lock.
func (d *sockDir) remove() {
	if d == nil || d.path == "" {
		return
	}
	os.RemoveAll(d.path)
	if d.lock != nil {
		d.lock.Close()
	}
	if d.out != nil {
		d.out.Close()
	}
}

// sweepDeadHostDirs removes, from parent, the plugin socket directories
// whose host is gone (killed before it could clean up), and returns how
// many it removed. Directories of live hosts, and anything else in
// parent, are left alone. Start calls it once per parent directory and
// process.
func sweepDeadHostDirs(parent string) int {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), hostDirPrefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		// Never through a link: the plugin may write in its directory.
		f, err := osdep.OpenNoFollow(filepath.Join(dir, ownerFile), os.O_RDWR, 0)
		if err != nil {
			continue // not ours, or not finished: leave it
		}
		// Only a lock taken proves the owner gone; any error (it is
		// held, or the file system has no locks) leaves the directory.
		if osdep.TryLock(f) == nil && os.RemoveAll(dir) == nil {
			removed++
		}
		f.Close()
	}
	return removed
}
