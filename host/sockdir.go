package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/plugkit/plugkit/internal/listen"
	"github.com/plugkit/plugkit/internal/osdep"
)

// A host gives each plugin it launches a private directory of its own,
// named plugkit-host-*, as PLUGIN_UNIX_SOCKET_DIR: plugkit plugins and
// go-plugin plugins from v1.5 on make their sockets there, and so do the
// host's brokered servers. The host removes the whole directory after it
// reaped the plugin, whatever the plugin did (a version rejection, a crash,
// SIGKILL, a go-plugin plugin that never removes its socket). A host that
// was itself SIGKILLed cannot; the next host sweeps such directories.
//
// The plugins' directories are inside one directory of the host's (and
// numbered there, so that a socket's path grows by a few bytes only),
// which holds an .owner file the host keeps
// flock()ed while it has a plugin: a directory whose lock can be taken
// has lost its owner. One lock for all of a host's plugins, not one a
// plugin, so that a plugin costs its host no descriptor for it. The host
// removes its directory, and drops the lock, when its last plugin's
// directory is removed; the next plugin makes a new one.

const (
	// hostDirPrefix names the host's directory of private directories.
	hostDirPrefix = "plugkit-host-"
	// ownerFile is the lock file inside the host's directory.
	ownerFile = ".owner"
	// nestedSocket is the path a plugkit plugin makes inside the host's
	// directory: the plugin's directory (numbered in the host's), and its
	// own private directory and socket in it.
	nestedSocket = "/0000000000/plugkit-0000000000/plugin.sock"
)

// sockDir is a plugin's private directory, inside its host's.
type sockDir struct {
	path    string
	owner   *ownerDir
	removed atomic.Bool
}

// ownerDir is a host's directory of its plugins' directories, and its lock.
type ownerDir struct {
	path  string
	lock  *os.File
	users int // plugin directories in it; ownerDirs.mu
	next  atomic.Uint64
}

var (
	sweptDirs sync.Map // parent directory -> struct{}: swept once per process
	ownerDirs struct {
		mu  sync.Mutex
		dir map[string]*ownerDir // parent directory -> this host's directory in it
	}
)

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
	owner, err := useOwnerDir(parent)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(owner.path, strconv.FormatUint(owner.next.Add(1), 10))
	if err := os.Mkdir(dir, 0o700); err != nil {
		owner.release()
		return nil, fmt.Errorf("creating the plugin's socket directory: %w", err)
	}
	return &sockDir{path: dir, owner: owner}, nil
}

// useOwnerDir is the host's directory in parent, made and locked if it
// has none, counted as used by one more plugin.
func useOwnerDir(parent string) (*ownerDir, error) {
	ownerDirs.mu.Lock()
	defer ownerDirs.mu.Unlock()
	if d := ownerDirs.dir[parent]; d != nil {
		d.users++
		return d, nil
	}
	dir, err := os.MkdirTemp(parent, hostDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("creating the host's socket directory: %w", err)
	}
	// Lock under a temporary name, then rename: a sweeper only looks at
	// ownerFile, so it never sees the file before it is locked.
	tmp := filepath.Join(dir, ownerFile+".new")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o600)
	if err == nil {
		if err = osdep.TryLock(f); err == nil {
			err = os.Rename(tmp, filepath.Join(dir, ownerFile))
		}
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		os.RemoveAll(dir)
		return nil, fmt.Errorf("locking the host's socket directory %s: %w", dir, err)
	}
	if ownerDirs.dir == nil {
		ownerDirs.dir = map[string]*ownerDir{}
	}
	d := &ownerDir{path: dir, lock: f, users: 1}
	ownerDirs.dir[parent] = d
	return d, nil
}

// release counts one plugin fewer in d; after the last, d is removed and
// its lock dropped (removed first: a sweeper that takes the lock finds
// nothing left of a live host's).
func (d *ownerDir) release() {
	ownerDirs.mu.Lock()
	defer ownerDirs.mu.Unlock()
	if d.users--; d.users > 0 {
		return
	}
	for parent, o := range ownerDirs.dir {
		if o == d {
			delete(ownerDirs.dir, parent)
		}
	}
	os.RemoveAll(d.path)
	d.lock.Close()
}

// share lets group reach the directory (listen.ShareDir), and through
// the host's directory, which others may then pass through but not list:
// its plugins' directories keep their own modes.
func (d *sockDir) share(group string) error {
	if err := listen.ShareDir(d.path, group); err != nil {
		return err
	}
	return os.Chmod(d.owner.path, 0o711)
}

// remove deletes the directory and everything in it, once.
func (d *sockDir) remove() {
	if d == nil || d.path == "" || d.removed.Swap(true) {
		return
	}
	os.RemoveAll(d.path)
	d.owner.release()
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
		f, err := os.OpenFile(filepath.Join(dir, ownerFile), os.O_RDWR, 0)
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
