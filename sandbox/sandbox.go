package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/sandbox/internal/trampoline"
)

// DefaultTmpSize bounds the plugin's private /tmp when Runner.TmpSize is 0.
const DefaultTmpSize = 64 << 20

// Nobody is the user and group a plugin runs as when Runner.UID and
// Runner.GID are 0: the overflow ID, nobody and nogroup on Debian.
const Nobody = 65534

// maxID is the largest user or group ID the kernel accepts: (uid_t)-1
// means "unchanged" to the set*id calls.
const maxID = 1<<32 - 2

// Runner is a host.Runner that runs each plugin in a sandbox of its own
// (see the package documentation). The zero value grants no writable
// directory besides the plugin's private /tmp and its socket directory.
type Runner struct {
	// Writable is the one directory of the host's file system the plugin
	// may write to, at the same path. It must exist, be absolute, and be
	// neither /, nor /tmp, nor a directory holding /tmp. Empty grants none.
	Writable string
	// TmpSize bounds the plugin's private /tmp, in bytes; 0 means
	// DefaultTmpSize.
	TmpSize int64
	// UID and GID are the user and group the plugin runs as, without
	// supplementary groups; 0 means Nobody. A sandboxed plugin never runs
	// as root: root owns most of the files in /proc and /sys that reach
	// the kernel, and a root plugin that found a way out of its
	// namespaces would be root on the host. Only a root host can choose
	// the user: a rootless one runs the plugin as its own user, and
	// refuses UID and GID other than 0. Give each plugin a user of
	// its own to keep plugins from each other's files too. Prepare gives the Writable directory itself
	// (not what it already holds) to this user and group, and the host
	// gives them the plugin's socket directory and brokered sockets
	// (host.Launch.SocketGroup); Command.Listen.UnixSocketGroup, if set, is
	// replaced by GID.
	UID, GID int
	// Minimum is the weakest isolation the caller accepts; 0 means
	// Namespaces. Prepare picks the strongest this host gives (see
	// Runner.Check) and fails, naming the missing kernel feature or
	// sysctl, when that is weaker than Minimum: it never weakens the
	// sandbox silently.
	Minimum Isolation
	// Limits bound what the plugin consumes; the zero value sets none.
	Limits Limits
	// InheritEnv names variables of the host's own environment the
	// plugin gets, besides those host.Command.InheritEnv names. A
	// sandboxed plugin gets no variable of the host's that neither names:
	// where host.Command.InheritEnv is nil (the host's whole environment,
	// for an unsandboxed plugin), it starts from host.Command.Env, the
	// handshake variables, the trace context, TMPDIR and what InheritEnv
	// names alone, so that no secret of the host's (a cloud credential, a
	// token) reaches it unless named.
	InheritEnv []string
	// InheritAllEnv passes the host's whole environment, secrets
	// included, where host.Command.InheritEnv is nil, as an unsandboxed
	// plugin gets it: opt in only for a plugin trusted with them.
	InheritAllEnv bool
	// KeepGroups accepts that a plugin keeps the supplementary groups of
	// the host's user where the sandbox cannot drop them: in the rootless
	// and LandlockOnly modes, where only a privileged process may change
	// its groups. Without it, such a host whose user has supplementary
	// groups is refused (Check and Prepare say so), for the files and
	// sockets open to those groups (docker's socket, say) would be the
	// plugin's. A root host always drops them.
	KeepGroups bool

	// sysctlDir is where the kernel's settings are read: /proc/sys when
	// empty. The tests point it at settings of their own.
	sysctlDir string
}

// Isolation is a level of isolation, from the weakest to the strongest.
type Isolation int

const (
	// LandlockOnly: no namespace; Landlock (Linux 5.13+) restricts the
	// plugin's file system to reading, and writing its granted
	// directories, and, with Landlock ABI 4 and later, denies it TCP;
	// with ABI 6 and later it cannot signal processes outside its
	// sandbox; the seccomp filter and no_new_privs apply. The plugin runs
	// as the host's user and sees the host's processes and /tmp.
	LandlockOnly Isolation = iota + 1
	// Namespaces: the plugin's own network, mount, PID, UTS, IPC and
	// cgroup namespaces, a read-only file system with a private /tmp, a
	// minimal /dev, the seccomp filter; made by a root host (the plugin
	// runs as Runner.UID) or, for any other user, in an unprivileged user
	// namespace (the plugin runs as the host's user); Landlock too, where
	// the kernel has it.
	Namespaces
	// NamespacesAndLandlock: Namespaces, and Landlock required.
	NamespacesAndLandlock
)

// String names the level as its constant.
func (i Isolation) String() string {
	switch i {
	case LandlockOnly:
		return "LandlockOnly"
	case Namespaces:
		return "Namespaces"
	case NamespacesAndLandlock:
		return "NamespacesAndLandlock"
	}
	return fmt.Sprintf("Isolation(%d)", int(i))
}

// minimum returns r.Minimum, with 0 meaning Namespaces.
func (r Runner) minimum() (Isolation, error) {
	switch r.Minimum {
	case 0:
		return Namespaces, nil
	case LandlockOnly, Namespaces, NamespacesAndLandlock:
		return r.Minimum, nil
	}
	return 0, fmt.Errorf("sandbox: Runner.Minimum %d is no isolation level: use sandbox.LandlockOnly, sandbox.Namespaces or sandbox.NamespacesAndLandlock, or 0 for Namespaces", int(r.Minimum))
}

// Check returns the isolation Prepare gives a plugin on this host, or
// the error Prepare would return: what this host lacks to give
// Runner.Minimum.
func (r Runner) Check() (Isolation, error) {
	p, err := r.plan()
	return p.level, err
}

// Enforcement says what enforces each of r.Limits on this host, or the
// error Prepare would return: a limit nothing here can enforce.
func (r Runner) Enforcement() (Enforcement, error) {
	p, err := r.plan()
	if err != nil {
		return Enforcement{}, err
	}
	return r.enforcement(p.mode)
}

// plan is how Prepare isolates a plugin on this host.
type plan struct {
	mode     trampoline.Mode
	landlock int // the Landlock ABI, 0 for none
	level    Isolation
}

// Prepare rewrites the launch to run the plugin in the sandbox: the
// host's own binary in new namespaces, as the trampoline described in the
// package documentation, in the mode Check names. It fails, before
// anything runs, when this host cannot give Runner.Minimum, cannot
// enforce Runner.Limits (Enforcement), or Writable is unusable, or the
// program did not call Init.
func (r Runner) Prepare(l *host.Launch) error {
	p, err := r.plan()
	if err != nil {
		return err
	}
	if !initialized.Load() {
		return errNoInit
	}
	uid, gid, err := r.user(p.mode)
	if err != nil {
		return err
	}
	enf, err := r.enforcement(p.mode)
	if err != nil {
		return err
	}
	sp := trampoline.Spec{Exe: l.Cmd.Path, Dir: l.Cmd.Dir, TmpSize: r.TmpSize, UID: uid, GID: gid, Mode: p.mode, Landlock: p.landlock}
	if p.mode == trampoline.UserNS {
		if sp.HostNS, err = hostNamespaces(); err != nil {
			return err
		}
	}
	if err := r.view(l, &sp); err != nil {
		return err
	}
	// Last: the cgroup is removed only once the plugin has run.
	if err := r.applyLimits(l, &sp, enf); err != nil {
		return err
	}
	js, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	env := r.environment(l)
	tmp := "/tmp"
	if p.mode == trampoline.LandlockOnly && len(sp.Keep) > 0 {
		tmp = sp.Keep[0] // the host's /tmp is not the plugin's to write
	}
	extra := []string{"TMPDIR=" + tmp, trampoline.Env + "=" + string(js)}
	if l.SocketDir != "" && p.mode == trampoline.Root {
		l.SocketGroup = strconv.Itoa(gid)
		extra = append(extra, handshake.EnvUnixSocketGroup+"="+l.SocketGroup)
	}
	// exec.Cmd uses the last of duplicate variables: these replace any
	// earlier value.
	l.Cmd.Env = append(env[:len(env):len(env)], extra...)
	l.Cmd.Path = "/proc/self/exe"
	isolate(l.Cmd, p.mode)
	l.PluginToHost = refuseTCP("the plugin listens on TCP inside the sandbox, on its own loopback, which the host cannot reach: let it use a unix socket (leave host.Command.Listen.Network empty)")
	l.HostToPlugin = refuseTCP("the host announced a TCP address to a sandboxed plugin, which has no network: brokered services must use unix sockets")
	if sp.SocketDir != "" {
		socketView(l, sp.SocketDir)
	}
	return nil
}

// socketView lets the host reach the plugin's socket directory, dir, a
// tmpfs in the plugin's mount namespace (trampoline.SocketDirSize and
// SocketDirInodes bound it): through /proc/PID/root of the plugin's
// process, under the same path. The plugin's addresses in dir (or under
// the host's name for it) translate to that view; the host's brokered
// servers listen there, and their addresses translate back.
func socketView(l *host.Launch, dir string) {
	named := filepath.Clean(l.SocketDir)
	root := func() string { return "/proc/" + strconv.Itoa(l.Cmd.Process.Pid) + "/root" }
	under := func(path, d string) (string, bool) {
		rest, ok := strings.CutPrefix(path, d+"/")
		return rest, ok
	}
	toHost, toPlugin := l.PluginToHost, l.HostToPlugin
	l.HostSocketDir = func() string { return root() + dir }
	l.PluginToHost = func(network, address string) (string, string, error) {
		network, address, err := toHost(network, address)
		if err != nil {
			return "", "", err
		}
		for _, d := range []string{dir, named} {
			if rest, ok := under(address, d); ok {
				return network, root() + dir + "/" + rest, nil
			}
		}
		return network, address, nil
	}
	l.HostToPlugin = func(network, address string) (string, string, error) {
		network, address, err := toPlugin(network, address)
		if err != nil {
			return "", "", err
		}
		if rest, ok := under(address, root()+dir); ok {
			return network, dir + "/" + rest, nil
		}
		return network, address, nil
	}
}

// environment returns the plugin's environment: of the launch's, the
// host's variables passed unnamed (Launch.Unnamed; all of a nil Cmd.Env)
// that InheritEnv names, or all with InheritAllEnv, and the rest as it
// is.
func (r Runner) environment(l *host.Launch) []string {
	env, n := l.Cmd.Env, l.Unnamed
	if env == nil {
		env = os.Environ()
		n = len(env)
	}
	n = min(max(n, 0), len(env))
	out := make([]string, 0, len(env))
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if i < n && !r.InheritAllEnv && !slices.Contains(r.InheritEnv, k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// user returns the user and group the plugin runs as in mode: a root
// host's choice (ids), or the host's own.
func (r Runner) user(mode trampoline.Mode) (uid, gid int, err error) {
	if uid, gid, err = r.ids(); err != nil || mode == trampoline.Root {
		return uid, gid, err
	}
	if r.UID != 0 || r.GID != 0 {
		return 0, 0, fmt.Errorf("sandbox: Runner.UID and Runner.GID need a host running as root, and this one runs as user %d: leave them 0 (the plugin then runs as the host's user), or run the host as root", os.Geteuid())
	}
	return os.Geteuid(), os.Getegid(), nil
}

// view completes sp with the plugin's view of the file system: the size
// of its /tmp, the directories it keeps writable (given to its user by a
// root host) and its working directory.
func (r Runner) view(l *host.Launch, sp *trampoline.Spec) error {
	if sp.TmpSize < 0 {
		return fmt.Errorf("sandbox: Runner.TmpSize %d is negative: give a size in bytes, or 0 for %d", r.TmpSize, DefaultTmpSize)
	}
	if sp.TmpSize == 0 {
		sp.TmpSize = DefaultTmpSize
	}
	if r.Writable != "" {
		dir, err := grantable(r.Writable)
		if err != nil {
			return err
		}
		if sp.Mode == trampoline.Root {
			if err := giveDir(dir, sp.UID, sp.GID); err != nil {
				return err
			}
		}
		sp.Keep = append(sp.Keep, dir)
	}
	if l.SocketDir != "" {
		dir, err := filepath.EvalSymlinks(l.SocketDir)
		if err != nil {
			return fmt.Errorf("sandbox: the plugin's socket directory: %w", err)
		}
		if sp.Mode == trampoline.LandlockOnly {
			sp.Keep = append(sp.Keep, dir) // no mount namespace: the host's
		} else {
			sp.SocketDir = dir // a tmpfs of its own (socketView)
		}
	}
	if sp.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("sandbox: the plugin's working directory: %w (set host.Command.Dir)", err)
		}
		writable := ""
		if r.Writable != "" {
			writable = sp.Keep[0] // resolved above
		}
		sp.Dir = inheritedDir(wd, sp.Keep, writable)
	}
	return nil
}

// ids returns the plugin's user and group: UID and GID, or Nobody for 0.
func (r Runner) ids() (uid, gid int, err error) {
	uid, gid = r.UID, r.GID
	if uid == 0 {
		uid = Nobody
	}
	if gid == 0 {
		gid = Nobody
	}
	if uid < 0 || uid > maxID || gid < 0 || gid > maxID {
		return 0, 0, fmt.Errorf("sandbox: Runner.UID %d or Runner.GID %d is out of range: give IDs from 1 to %d, or 0 for %d (nobody)", r.UID, r.GID, maxID, Nobody)
	}
	return uid, gid, nil
}

// giveDir gives the directory dir (a real path) to the plugin's user and
// group, so that it can write there; what dir already holds keeps its
// owner.
func giveDir(dir string, uid, gid int) error {
	if err := os.Lchown(dir, uid, gid); err != nil {
		return fmt.Errorf("sandbox: giving Runner.Writable %s to the plugin's user %d and group %d: %w", dir, uid, gid, err)
	}
	return nil
}

// grantable checks the directory to grant and returns its real path.
func grantable(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("sandbox: Runner.Writable %q is not an absolute path: give the directory's full path", dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox: Runner.Writable: %w (create the directory first)", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("sandbox: Runner.Writable: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("sandbox: Runner.Writable %s is not a directory: grant a directory", dir)
	}
	if real == "/" || real == "/tmp" || strings.HasPrefix("/tmp/", real+"/") {
		return "", fmt.Errorf("sandbox: Runner.Writable %s would expose the host's / or /tmp: grant a directory of the plugin's own", dir)
	}
	return real, nil
}

// refuseTCP is a translation that keeps unix addresses, which host and
// plugin share through the socket directory, and refuses TCP ones.
func refuseTCP(why string) host.TranslateFunc {
	return func(network, address string) (string, string, error) {
		if network != "unix" {
			return "", "", errors.New(why)
		}
		return network, address, nil
	}
}

// inheritedDir is where a plugin whose host.Command.Dir is empty starts:
// the host's working directory wd, unless the sandbox hides it (wd is under
// /tmp, which becomes the plugin's private tmpfs, and not inside a
// directory kept visible), then the granted directory (Writable), else the
// root. An explicit host.Command.Dir is used as it is.
func inheritedDir(wd string, keep []string, writable string) string {
	wd = filepath.Clean(wd)
	under := func(dir, root string) bool {
		return dir == root || strings.HasPrefix(dir, root+"/")
	}
	if !under(wd, "/tmp") {
		return wd
	}
	for _, k := range keep {
		if under(wd, k) {
			return wd
		}
	}
	if writable != "" {
		return writable
	}
	return "/"
}
