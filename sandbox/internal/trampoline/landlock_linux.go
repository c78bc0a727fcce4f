package trampoline

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Landlock rights this trampoline handles, by the ABI that brought
// them (linux/landlock.h).
const (
	llRead  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llABI1  = 1<<13 - 1 // EXECUTE to MAKE_SYM
	llFile  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	llDevRW = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// ABI returns the Landlock ABI version of the running kernel, or an error
// saying that it has none.
func ABI() (int, error) {
	v, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch errno {
	case 0:
		return int(v), nil
	case syscall.ENOSYS:
		return 0, fmt.Errorf("the kernel has no Landlock (it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)")
	case syscall.EOPNOTSUPP:
		return 0, fmt.Errorf("the kernel has Landlock built in but not enabled: add landlock to the lsm= boot parameter")
	default:
		return 0, fmt.Errorf("asking the kernel for its Landlock ABI: %w", errno)
	}
}

// handledFS is the set of file system rights a ruleset of that ABI handles.
func handledFS(abi int) uint64 {
	fs := uint64(llABI1)
	if abi >= 2 {
		fs |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		fs |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		fs |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return fs
}

// readable adds the rules that let the plugin read and execute: under /
// in the namespace modes, whose /dev is the sandbox's own; in
// LandlockOnly mode, where /dev is the host's, under every entry of /
// but /dev, whose devices of devices are added apart: the host's
// terminals (/dev/pts, reached through /proc/PID/fd too) are not the
// plugin's to read. Only / itself may be listed.
func readable(mode Mode, add func(path string, access uint64) error) error {
	if mode != LandlockOnly {
		return add("/", llRead)
	}
	if err := add("/", unix.LANDLOCK_ACCESS_FS_READ_DIR); err != nil {
		return err
	}
	entries, err := os.ReadDir("/")
	if err != nil {
		return fmt.Errorf("listing / for the Landlock rules: %w", err)
	}
	for _, e := range entries {
		path := "/" + e.Name()
		if path == "/dev" {
			continue
		}
		fi, err := os.Stat(path)
		if err != nil {
			continue // a dangling link, or what the host's user cannot reach: nothing to grant
		}
		access := uint64(llRead)
		if !fi.IsDir() {
			access = llRead &^ unix.LANDLOCK_ACCESS_FS_READ_DIR // a file's rule holds file rights only
		}
		if err := add(path, access); err != nil {
			return err
		}
	}
	return nil
}

// restrictFS restricts the calling thread, and the plugin it executes
// next, with Landlock: it may read and execute everywhere, write only in
// the directories of sp.Keep (and its private /tmp, in the namespace
// modes) and the devices of the minimal /dev; with ABI 6, it may not
// signal processes outside its domain nor reach abstract unix sockets
// outside it; in LandlockOnly mode, with ABI 4, it may neither bind nor
// connect TCP sockets. no_new_privs must already be set.
func restrictFS(sp Spec) error {
	fs := handledFS(sp.Landlock)
	attr := unix.LandlockRulesetAttr{Access_fs: fs}
	if sp.Mode == LandlockOnly && sp.Landlock >= 4 {
		attr.Access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if sp.Landlock >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	}
	size := unsafe.Sizeof(attr)
	if sp.Landlock < 4 {
		size = unsafe.Offsetof(attr.Access_net) // ABI 1 to 3 know only the file system field
	}
	r, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("creating the Landlock ruleset (ABI %d): %w", sp.Landlock, errno)
	}
	ruleset := int(r)
	defer syscall.Close(ruleset)
	add := func(path string, access uint64) error {
		fd, err := syscall.Open(path, oPath|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening %s for a Landlock rule: %w", path, err)
		}
		defer syscall.Close(fd)
		rule := unix.LandlockPathBeneathAttr{Allowed_access: access & fs, Parent_fd: int32(fd)}
		if _, _, errno := syscall.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("the Landlock rule for %s: %w", path, errno)
		}
		return nil
	}
	if err := readable(sp.Mode, add); err != nil {
		return err
	}
	writable := sp.Keep
	if sp.Mode != LandlockOnly {
		writable = append(writable[:len(writable):len(writable)], "/tmp") // the private tmpfs
		if sp.SocketDir != "" {
			writable = append(writable, sp.SocketDir) // its own tmpfs too
		}
	}
	for _, dir := range writable {
		if err := add(dir, fs); err != nil {
			return err
		}
	}
	for _, name := range devices {
		if err := add("/dev/"+name, llDevRW&llFile); err != nil {
			return err
		}
	}
	if _, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("enforcing the Landlock ruleset: %w", errno)
	}
	return nil
}
