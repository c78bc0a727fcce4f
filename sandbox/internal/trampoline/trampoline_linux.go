package trampoline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/plugkit/plugkit/internal/osdep"
)

// oPath is O_PATH, which package syscall lacks (the same on every
// architecture Go supports on Linux but sparc64, which Go does not).
const oPath = 0x200000

// Init is the trampoline's entry, which sandbox.Init calls: in the
// re-executed host binary, with Env set, it builds the sandbox and
// executes the plugin, and never returns. In every other run it does
// nothing.
func Init() {
	v, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	err := run(v) // returns only on failure
	fmt.Fprintf(os.Stderr, "plugkit sandbox: %v\n", err)
	os.Exit(126)
}

// run builds the sandbox from the spec in js and executes the
// plugin.
func run(js string) error {
	// Capabilities, credentials, no_new_privs, the death signal and the
	// seccomp filter belong to a thread: set them on the one that
	// executes the plugin.
	runtime.LockOSThread()
	if err := os.Unsetenv(Env); err != nil {
		return err
	}
	var sp Spec
	if err := json.Unmarshal([]byte(js), &sp); err != nil {
		return fmt.Errorf("%s is not a sandbox spec (%v): it is set only by the sandbox for its own re-exec; unset it", Env, err)
	}
	// Join the plugin's cgroups before anything else runs in it.
	for _, fd := range sp.Cgroups {
		_, err := syscall.Write(fd, []byte("0"))
		syscall.Close(fd)
		if err != nil {
			return fmt.Errorf("joining the plugin's cgroup: %w", err)
		}
	}
	if sp.Mode != LandlockOnly {
		// Only now, in its cgroups: they are the root of its view
		// (/proc/self/cgroup), as container runtimes make it.
		if err := syscall.Unshare(syscall.CLONE_NEWCGROUP); err != nil {
			return fmt.Errorf("making the plugin's cgroup namespace: %w", err)
		}
	}
	watch, err := checkIsolated(sp)
	if err != nil {
		return err
	}
	if sp.UID <= 0 || sp.GID <= 0 {
		return fmt.Errorf("%s names user %d and group %d: the sandbox never runs a plugin as root; it is set only by the sandbox for its own re-exec", Env, sp.UID, sp.GID)
	}
	var exe int
	if sp.Mode == LandlockOnly {
		// No mount namespace: nothing is mounted, the plugin sees the
		// host's file system through Landlock's rules.
		exe, err = syscall.Open(sp.Exe, oPath, 0)
		if err != nil {
			return fmt.Errorf("opening the plugin %s: %w", sp.Exe, err)
		}
	} else if exe, err = buildView(sp); err != nil {
		return err
	}
	if err := os.Chdir(sp.Dir); err != nil {
		return fmt.Errorf("the working directory %s is not in the sandbox's view (%v): set host.Command.Dir to a directory outside /tmp, or to Runner.Writable", sp.Dir, err)
	}
	if sp.Mode != LandlockOnly {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bringing up the loopback interface: %w", err)
		}
	}
	if err := dropPrivileges(sp, watch); err != nil {
		return err
	}
	if err := setLimits(sp); err != nil {
		return err
	}
	if sp.Landlock > 0 {
		if err := restrictFS(sp); err != nil {
			return err
		}
	}
	if err := loadSeccomp(sp); err != nil {
		return fmt.Errorf("installing the seccomp filter: %w", err)
	}
	path, env := "/proc/self/fd/"+strconv.Itoa(exe), os.Environ()
	// Last: the trampoline, the host's binary, may already map more
	// than the plugin may (a race detector's shadow memory).
	if sp.Data > 0 {
		lim := syscall.Rlimit{Cur: uint64(sp.Data), Max: uint64(sp.Data)}
		if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &lim); err != nil {
			return fmt.Errorf("setting RLIMIT_DATA to %d: %w", sp.Data, err)
		}
		// The main thread's stack is no data: bound it by the same, where
		// it is not bound lower already.
		var stack syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &stack); err == nil && stack.Max > uint64(sp.Data) {
			stack = syscall.Rlimit{Cur: min(stack.Cur, uint64(sp.Data)), Max: uint64(sp.Data)}
			if err := syscall.Setrlimit(syscall.RLIMIT_STACK, &stack); err != nil {
				return fmt.Errorf("setting RLIMIT_STACK to %d: %w", sp.Data, err)
			}
		}
	}
	err = syscall.Exec(path, os.Args, env)
	if err == syscall.EACCES {
		return fmt.Errorf("executing the plugin %s as user %d, group %d: %w: let that user execute it (chmod o+rx, or choose Runner.UID and Runner.GID)", sp.Exe, sp.UID, sp.GID, err)
	}
	return fmt.Errorf("executing the plugin %s: %w", sp.Exe, err)
}

// buildView makes the plugin's view of the system in this process's new
// mount namespace: private mounts, a read-only root, a fresh /sys, a
// private /tmp, the writable directories bound back, a minimal /dev and
// a /proc of the new PID namespace with the kernel's knobs read-only and
// its leaky files masked. It returns a descriptor of the plugin's
// executable, opened before /tmp and /dev were replaced.
func buildView(sp Spec) (exe int, err error) {
	// Nothing mounted here may reach the host's namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return -1, fmt.Errorf("making the mounts private: %w", err)
	}
	// Open what must stay reachable before /tmp and /dev are replaced:
	// the plugin (not close-on-exec, so that an interpreter of a script
	// can open it too), the directories to keep writable and the
	// devices the minimal /dev keeps.
	exe, err = syscall.Open(sp.Exe, oPath, 0)
	if err != nil {
		return -1, fmt.Errorf("opening the plugin %s: %w", sp.Exe, err)
	}
	keep := make([]int, len(sp.Keep))
	for i, dir := range sp.Keep {
		if keep[i], err = syscall.Open(dir, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0); err != nil {
			return -1, fmt.Errorf("opening %s: %w", dir, err)
		}
	}
	devs, err := openDevices()
	if err != nil {
		return -1, err
	}
	if err := setReadOnly("/", true, true); err != nil {
		return -1, fmt.Errorf("making the file system read-only: %w", err)
	}
	// A fresh sysfs shows the new network namespace's interfaces (lo),
	// not the host's, and hides what is mounted under the host's /sys.
	if err := syscall.Mount("sysfs", "/sys", "sysfs", syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return -1, fmt.Errorf("mounting the sandbox's /sys: %w", err)
	}
	opts := "mode=1777,size=" + strconv.FormatInt(sp.TmpSize, 10)
	if err := syscall.Mount("tmpfs", "/tmp", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return -1, fmt.Errorf("mounting the private /tmp: %w", err)
	}
	if err := bindWritable(sp.Keep, keep); err != nil {
		return -1, err
	}
	if err := mountSocketDir(sp); err != nil {
		return -1, err
	}
	if err := mountDev(devs); err != nil {
		return -1, fmt.Errorf("making the minimal /dev: %w", err)
	}
	// A /proc of the new PID namespace, in which the plugin is process 1
	// and sees no process of the host's, with the kernel's knobs
	// read-only and its leaky files masked.
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		if sp.Mode == UserNS && err == syscall.EPERM {
			return -1, fmt.Errorf("mounting the sandbox's /proc: %w: in a user namespace the kernel refuses a new /proc while parts of the host's are covered (as in a container, whose runtime masks /proc files): run the host as root, or where /proc is whole", err)
		}
		return -1, fmt.Errorf("mounting the sandbox's /proc: %w", err)
	}
	if err := maskKernelFiles(); err != nil {
		return -1, err
	}
	return exe, nil
}

// bindWritable binds each directory of dirs, through the descriptor
// opened before /tmp was replaced (fds), back at its path, writable,
// nosuid and nodev, and closes the descriptor.
func bindWritable(dirs []string, fds []int) error {
	for i, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("making the mount point %s: %w", dir, err)
		}
		if err := syscall.Mount("/proc/self/fd/"+strconv.Itoa(fds[i]), dir, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding %s: %w", dir, err)
		}
		// Writable, and neither set-user-ID files nor devices there
		// take effect.
		attr := mountAttr{set: mountAttrNosuid | mountAttrNodev, clr: mountAttrRdonly}
		if err := setMountAttr(dir, attr, false); err != nil {
			return fmt.Errorf("making %s writable, nosuid and nodev: %w", dir, err)
		}
		syscall.Close(fds[i])
	}
	return nil
}

// mountSocketDir mounts the plugin's socket directory, a tmpfs of its
// own, bounded, at sp.SocketDir: the host's directory of that name stays
// out of the plugin's reach, and the host reaches this one through the
// plugin's /proc/PID/root. The plugin's user owns it (the host, as root
// or as that same user, may enter it too).
func mountSocketDir(sp Spec) error {
	if sp.SocketDir == "" {
		return nil
	}
	// The directories above it (the host's TMPDIR may be /tmp/user/0,
	// say) are made in the plugin's own /tmp; the plugin's user must be
	// able to pass through them. The tmpfs mounted on the last is 0700.
	if err := os.MkdirAll(sp.SocketDir, 0o755); err != nil {
		return fmt.Errorf("making the mount point %s: %w", sp.SocketDir, err)
	}
	opts := fmt.Sprintf("mode=0700,uid=%d,gid=%d,size=%d,nr_inodes=%d", sp.UID, sp.GID, SocketDirSize, SocketDirInodes)
	if err := syscall.Mount("tmpfs", sp.SocketDir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("mounting the socket directory %s: %w", sp.SocketDir, err)
	}
	return nil
}

// checkIsolated refuses to touch mounts unless this process is in
// namespaces other than its parent's: the trampoline must never remount
// the file system of the namespace the host lives in. It returns the
// parent's process ID in the host's PID namespace and a descriptor of
// this process's stat file in the host's /proc, with which
// dropPrivileges sees whether that parent still lives.
func checkIsolated(sp Spec) (*parentWatch, error) {
	mode := sp.Mode
	if mode != LandlockOnly && os.Getpid() != 1 {
		return nil, fmt.Errorf("%s is set but this process is not the first of a PID namespace of its own: it is set only by the sandbox for its own re-exec; unset it", Env)
	}
	// The parent is outside the PID namespace: find it through the
	// host's /proc, still mounted.
	fd, err := syscall.Open("/proc/self/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("finding the parent process: %w", err)
	}
	w := &parentWatch{stat: fd}
	if w.ppid, err = w.parent(); err != nil {
		return nil, fmt.Errorf("finding the parent process: %w", err)
	}
	if mode == LandlockOnly {
		return w, nil // it mounts nothing
	}
	ppid := strconv.Itoa(w.ppid)
	namespaces := []string{"mnt", "net", "uts", "ipc", "cgroup"}
	if mode == UserNS {
		namespaces = append(namespaces, "user")
	}
	for _, ns := range namespaces {
		own, err := ownNamespace(ns)
		if err != nil {
			return nil, fmt.Errorf("reading this process's %s namespace: %w", ns, err)
		}
		theirs, err := os.Readlink("/proc/" + ppid + "/ns/" + ns)
		if mode == UserNS {
			// The parent, in the user namespace above, is out of reach.
			theirs, err = sp.HostNS[ns], nil
			if theirs == "" {
				err = errors.New("the spec does not name it")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("reading the parent's %s namespace: %w", ns, err)
		}
		if own == theirs {
			return nil, fmt.Errorf("%s is set but this process shares its parent's %s namespace: it is set only by the sandbox for its own re-exec; unset it", Env, ns)
		}
	}
	return w, nil
}

// ownNamespace is the link of the calling thread's namespace ns. The
// trampoline makes its cgroup namespace with unshare(2) on its locked
// thread, which need not be the process's first: /proc/self names the
// first thread's namespaces, so a trampoline whose goroutine had moved to
// another thread (as it may on a loaded machine) saw the host's cgroup
// namespace there and refused to run.
func ownNamespace(ns string) (string, error) {
	return os.Readlink("/proc/thread-self/ns/" + ns)
}

// parentWatch reads this process's parent from the host's /proc, where
// the process IDs are the host's: getppid(2) answers 0 in a PID namespace
// whose parent is outside it. The descriptor, opened before the sandbox's
// own /proc hides the host's, keeps working after it.
type parentWatch struct {
	stat int // /proc/self/stat of the host's /proc
	ppid int // the parent when the trampoline started
}

func (w *parentWatch) parent() (int, error) {
	var buf [1024]byte
	n, err := syscall.Pread(w.stat, buf[:], 0)
	if err != nil {
		return 0, err
	}
	ppid, err := osdep.ParsePPID(string(buf[:n]))
	if err == nil && ppid == 0 {
		err = fmt.Errorf("no parent in %q", buf[:n])
	}
	return ppid, err
}

// mount_setattr(2), Linux 5.12: the only call that changes the flags of a
// whole mount tree at once while keeping each mount's other flags.
const (
	sysMountSetattr = 442 // the same number on every architecture
	atRecursive     = 0x8000
	atNoAutomount   = 0x800
	mountAttrRdonly = 0x1
	mountAttrNosuid = 0x2
	mountAttrNodev  = 0x4
)

type mountAttr struct {
	set, clr, propagation, usernsFD uint64
}

// setReadOnly sets (ro) or clears the read-only flag of the mount at path,
// and of every mount under it when recursive.
func setReadOnly(path string, ro, recursive bool) error {
	var attr mountAttr
	if ro {
		attr.set = mountAttrRdonly
	} else {
		attr.clr = mountAttrRdonly
	}
	return setMountAttr(path, attr, recursive)
}

// setMountAttr sets and clears the flags attr names on the mount at path,
// and on every mount under it when recursive.
func setMountAttr(path string, attr mountAttr, recursive bool) error {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	flags := atNoAutomount
	if recursive {
		flags |= atRecursive
	}
	atFDCWD := -100
	_, _, errno := syscall.Syscall6(sysMountSetattr, uintptr(atFDCWD), uintptr(unsafe.Pointer(p)), uintptr(flags), uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	switch {
	case errno == syscall.ENOSYS:
		return errors.New("the kernel has no mount_setattr: the sandbox needs Linux 5.12 or later")
	case errno != 0:
		return errno
	}
	return nil
}

// loopbackUp sets the IFF_UP flag of lo, the only interface of a new
// network namespace, which starts down.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [24]byte
	}
	copy(ifr.name[:], "lo")
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return errno
	}
	ifr.flags |= syscall.IFF_UP
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return errno
	}
	return nil
}

// dropPrivileges leaves the calling thread, and the program it executes
// next, as user uid and group gid with no supplementary group, without
// any capability and unable to gain one: no_new_privs; an empty bounding
// set (while CAP_SETPCAP is still there; without it, executing a program
// as root would grant every capability back); the groups and the user,
// which, leaving root, also empty the permitted, effective and ambient
// sets; then empty sets all the same, the inheritable one too.
//
// Changing the user clears the death signal the host asked for
// (Pdeathsig), so it is asked again, and the parent checked to be the
// same: had it died in between, the signal would never come.
//
// In the UserNS and LandlockOnly modes the user stays the host's: the
// trampoline cannot become another (UserNS: its capabilities, in its own
// user namespace, go with the drop; LandlockOnly: it has none to empty
// the bounding set with, and no_new_privs keeps any from coming back).
func dropPrivileges(sp Spec, w *parentWatch) error {
	uid, gid := sp.UID, sp.GID
	const (
		prCapbsetDrop   = 24
		prSetNoNewPrivs = 38
	)
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("setting no_new_privs: %w", errno)
	}
	if sp.Mode == LandlockOnly {
		return finishDrop(w)
	}
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapbsetDrop, uintptr(c), 0, 0, 0, 0); errno != 0 && errno != syscall.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, errno)
		}
	}
	if sp.Mode == Root {
		// The standard library changes the credentials of every thread
		// of the process; this one executes the plugin.
		if err := syscall.Setgroups([]int{}); err != nil {
			return fmt.Errorf("dropping the supplementary groups: %w", err)
		}
		if err := syscall.Setresgid(gid, gid, gid); err != nil {
			return fmt.Errorf("becoming group %d: %w", gid, err)
		}
		if err := syscall.Setresuid(uid, uid, uid); err != nil {
			return fmt.Errorf("becoming user %d: %w", uid, err)
		}
	}
	return finishDrop(w)
}

// finishDrop empties the capability sets, asks for the death signal again
// and checks that the host still lives.
func finishDrop(w *parentWatch) error {
	const (
		prSetPdeathsig = 1
		capV3          = 0x20080522
	)
	hdr := struct {
		version uint32
		pid     int32
	}{version: capV3}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("emptying the capability sets: %w", errno)
	}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetPdeathsig, uintptr(syscall.SIGKILL), 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("asking for the death signal again: %w", errno)
	}
	if ppid, err := w.parent(); err != nil || ppid != w.ppid {
		return fmt.Errorf("the host (process %d) exited while the sandbox was being built", w.ppid)
	}
	syscall.Close(w.stat)
	return nil
}

// setLimits sets the plugin's resource limits that rlimits enforce.
func setLimits(sp Spec) error {
	for _, l := range []struct {
		res  int
		n    int64
		name string
	}{{syscall.RLIMIT_NOFILE, int64(sp.NoFile), "RLIMIT_NOFILE"}, {rlimitNproc, int64(sp.NProc), "RLIMIT_NPROC"}, {syscall.RLIMIT_CPU, sp.CPU, "RLIMIT_CPU"}} {
		if l.n <= 0 {
			continue
		}
		lim := syscall.Rlimit{Cur: uint64(l.n), Max: uint64(l.n)}
		if err := syscall.Setrlimit(l.res, &lim); err != nil {
			return fmt.Errorf("setting %s to %d: %w", l.name, l.n, err)
		}
	}
	return nil
}

// rlimitNproc is RLIMIT_NPROC, which package syscall lacks (the same on
// the architectures Go supports on Linux but mips, sparc).
const rlimitNproc = 6
