package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/plugkit/plugkit/sandbox/internal/trampoline"
)

// Capabilities the sandbox needs (bit numbers, linux/capability.h).
const (
	capChown       = 0
	capDacOverride = 1
	capSetgid      = 6
	capSetuid      = 7
	capSetpcap     = 8
	capNetAdmin    = 12
	capSysAdmin    = 21
)

// Available says whether this process can run sandboxed plugins with a
// Runner's default Minimum (Namespaces): as root, or in an unprivileged
// user namespace. The error says what is missing and what to do.
func Available() error {
	_, err := Runner{}.Check()
	return err
}

// plan picks the strongest isolation this host gives: root's namespaces,
// else a user namespace's, else Landlock alone; with Landlock on top
// where the kernel has it. It fails when that is weaker than r.Minimum.
func (r Runner) plan() (plan, error) {
	minimum, err := r.minimum()
	if err != nil {
		return plan{}, err
	}
	abi, llErr := trampoline.ABI()
	p := plan{mode: trampoline.Root, landlock: abi, level: Namespaces}
	privErr := privileged()
	var nsErr error
	if privErr != nil {
		p.mode = trampoline.UserNS
		if nsErr = userNamespaces(r.sysctlDir); nsErr != nil {
			p.mode, p.level = trampoline.LandlockOnly, LandlockOnly
		}
	}
	if llErr != nil {
		p.landlock = 0
	} else if p.level == Namespaces {
		p.level = NamespacesAndLandlock
	}
	switch {
	case p.mode == trampoline.LandlockOnly && llErr != nil:
		return p, fmt.Errorf("sandbox: this host can isolate no plugin: %v; %v; and %v", privErr, nsErr, llErr)
	case p.mode == trampoline.LandlockOnly && minimum > LandlockOnly:
		return p, fmt.Errorf("sandbox: Runner.Minimum %v needs namespaces, and this host gives Landlock alone: %v; and %v. Set Runner.Minimum to sandbox.LandlockOnly to accept it", minimum, privErr, nsErr)
	case minimum == NamespacesAndLandlock && llErr != nil:
		return p, fmt.Errorf("sandbox: Runner.Minimum NamespacesAndLandlock needs Landlock: %v; set Runner.Minimum to sandbox.Namespaces to do without it", llErr)
	}
	if p.mode != trampoline.Root && !r.KeepGroups {
		if err := noGroups(p.level); err != nil {
			return p, err
		}
	}
	return p, nil
}

// noGroups refuses a host whose user has supplementary groups, which a
// plugin of the rootless and LandlockOnly modes (level) would keep: the
// kernel lets only a process with CAP_SETGID drop them, and in a user
// namespace only one whose group map a privileged process wrote.
func noGroups(level Isolation) error {
	groups, err := os.Getgroups()
	if err != nil {
		return fmt.Errorf("sandbox: reading the host's supplementary groups: %w", err)
	}
	egid := os.Getegid()
	groups = slices.DeleteFunc(groups, func(g int) bool { return g == egid })
	if len(groups) == 0 {
		return nil
	}
	return fmt.Errorf("sandbox: the host runs as user %d with the supplementary groups %v, which a plugin would keep in this host's mode (%v): only a privileged process may drop them, and files and sockets open to those groups (docker's socket, say) would be the plugin's. Run the host as root, or as a user without supplementary groups (a service user), or set Runner.KeepGroups to accept them", os.Geteuid(), groups, level)
}

// userNamespaces says whether this user may make a user namespace, and
// names the sysctl that forbids it otherwise. It reads the sysctls under
// sysctlDir, /proc/sys when empty.
func userNamespaces(sysctlDir string) error {
	if sysctlDir == "" {
		sysctlDir = "/proc/sys"
	}
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		return fmt.Errorf("the kernel has no user namespaces (CONFIG_USER_NS)")
	}
	for _, c := range []struct{ file, name, off, fix string }{
		{"kernel/unprivileged_userns_clone", "kernel.unprivileged_userns_clone", "0", "set it to 1"},
		{"user/max_user_namespaces", "user.max_user_namespaces", "0", "set it above 0"},
		{"kernel/apparmor_restrict_unprivileged_userns", "kernel.apparmor_restrict_unprivileged_userns", "1", "set it to 0, or give the host's binary an AppArmor profile that allows userns"},
	} {
		b, err := os.ReadFile(filepath.Join(sysctlDir, c.file))
		if err != nil {
			continue // not this kernel's, or not its distribution's
		}
		if strings.TrimSpace(string(b)) == c.off {
			return fmt.Errorf("unprivileged user namespaces are off: the sysctl %s is %s (%s)", c.name, c.off, c.fix)
		}
	}
	return nil
}

// hostNamespaces returns this process's namespaces, which the trampoline
// checks it does not share.
func hostNamespaces() (map[string]string, error) {
	ns := map[string]string{}
	for _, name := range []string{"mnt", "net", "uts", "ipc", "cgroup", "user"} {
		link, err := os.Readlink("/proc/self/ns/" + name)
		if err != nil {
			return nil, fmt.Errorf("sandbox: reading the host's %s namespace: %w (is /proc mounted?)", name, err)
		}
		ns[name] = link
	}
	return ns, nil
}

// privileged says whether this process can make the plugin's namespaces
// and mounts as root: it needs CAP_SYS_ADMIN (namespaces, mounts),
// CAP_NET_ADMIN (the loopback), CAP_SETPCAP (dropping capabilities),
// CAP_SETUID and CAP_SETGID (running the plugin as its own user),
// CAP_CHOWN (giving it the directories it writes) and CAP_DAC_OVERRIDE
// (reaching and removing the sockets it makes as that user), which root
// has outside a container.
func privileged() error {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("sandbox: reading this process's capabilities: %w (is /proc mounted?)", err)
	}
	var eff uint64
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return fmt.Errorf("sandbox: malformed CapEff line %q in /proc/self/status", line)
			}
		}
	}
	var missing []string
	for _, c := range []struct {
		bit  uint
		name string
	}{
		{capSysAdmin, "CAP_SYS_ADMIN"}, {capNetAdmin, "CAP_NET_ADMIN"}, {capSetpcap, "CAP_SETPCAP"},
		{capSetuid, "CAP_SETUID"}, {capSetgid, "CAP_SETGID"}, {capChown, "CAP_CHOWN"}, {capDacOverride, "CAP_DAC_OVERRIDE"},
	} {
		if eff&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("this process (uid %d) lacks %s, needed to make the plugin's namespaces as root (in a container: --privileged, or --cap-add SYS_ADMIN --cap-add NET_ADMIN with the default SETPCAP, SETUID, SETGID, CHOWN and DAC_OVERRIDE kept, and seccomp allowing unshare and mount)",
			os.Geteuid(), strings.Join(missing, ", "))
	}
	return nil
}

// isolate makes cmd start in a session of its own, without the host's
// controlling terminal (as bwrap --new-session does), in every mode; and,
// but in mode LandlockOnly, in new mount, network, PID, UTS (host name)
// and IPC (System V and POSIX message queues, shared memory, semaphores)
// namespaces (the trampoline makes the cgroup namespace once it is in
// its cgroup); in mode UserNS owned by a new user namespace in which the
// host's user and group map to themselves and the trampoline keeps,
// through the exec, the capabilities it needs there.
func isolate(cmd *exec.Cmd, mode trampoline.Mode) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	a.Setsid = true
	if mode == trampoline.LandlockOnly {
		return
	}
	a.Cloneflags |= syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC
	if mode == trampoline.UserNS {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
		a.AmbientCaps = []uintptr{capSysAdmin, capNetAdmin, capSetpcap}
	}
}
