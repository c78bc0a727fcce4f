package sandbox_test

// The probe's commands for the attacks of issue 36 (the host's terminal,
// set-user-ID files, supplementary groups, the environment, socket
// families, the cgroup view): what a hostile plugin tries from inside the
// sandbox. Each answers one line per attempt, "what: result", result being
// "ok" or the error.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	probeCommands["tty"] = func(_ *probe, _ context.Context, arg string) (string, error) { return ttyAttack(arg), nil }
	probeCommands["setuid"] = func(_ *probe, _ context.Context, arg string) (string, error) { return setuidAttack(arg), nil }
	probeCommands["env"] = func(*probe, context.Context, string) (string, error) {
		return strings.Join(os.Environ(), "\n"), nil
	}
	probeCommands["socket"] = func(_ *probe, _ context.Context, arg string) (string, error) {
		return probeOK(openSocket(arg))
	}
	probeCommands["udp"] = func(_ *probe, _ context.Context, arg string) (string, error) {
		return probeOK(sendUDP(arg))
	}
	probeCommands["dialunix"] = func(_ *probe, _ context.Context, arg string) (string, error) {
		c, err := net.DialTimeout("unix", arg, 2*time.Second)
		if err == nil {
			c.Close()
		}
		return probeOK(err)
	}
}

// result words an attempt's error: "ok" or the error's text.
func result(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// ttyAttack tries what a plugin in the host's session would do with the
// host's terminal (pts, the host's standard input as the host sees it):
// open /dev/tty, the terminal itself and, where it sees the host's
// processes, the host's standard input; push "echo pwned" into each
// terminal it opened (TIOCSTI) and take its foreground (TIOCSPGRP, with
// SIGTTOU ignored as an attacker would); and the same calls on its own
// standard input, where only the seccomp filter tells them apart (EPERM,
// not ENOTTY), with the command's upper 32 bits set too (the kernel
// ignores them). It also answers its session: "sid" ok when it leads its
// own.
func ttyAttack(pts string) string {
	signal.Ignore(syscall.SIGTTOU)
	var out []string
	say := func(what string, err error) { out = append(out, what+": "+result(err)) }
	try := func(name string, fd int) {
		for _, c := range []byte("echo pwned\n") {
			if err := ioctlPtr(fd, unix.TIOCSTI, &c); err != nil {
				say("TIOCSTI "+name, err)
				break
			}
			if c == '\n' {
				say("TIOCSTI "+name, nil)
			}
		}
		pgrp := int32(unix.Getpgrp())
		say("TIOCSPGRP "+name, ioctlPtr(fd, unix.TIOCSPGRP, (*byte)(unsafe.Pointer(&pgrp))))
	}
	paths := []string{"/dev/tty", pts}
	if ppid := os.Getppid(); ppid > 0 {
		paths = append(paths, "/proc/"+strconv.Itoa(ppid)+"/fd/0")
	}
	for _, p := range paths {
		fd, err := unix.Open(p, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			// Reading alone would let it take what the user types.
			fd, err = unix.Open(p, unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		}
		say("open "+p, err)
		if err == nil {
			try(p, fd)
			unix.Close(fd)
		}
	}
	c := byte('x')
	say("TIOCSTI stdin", ioctlPtr(0, unix.TIOCSTI, &c))
	say("TIOCSTI|1<<32 stdin", ioctlPtr(0, unix.TIOCSTI|1<<32, &c))
	pgrp := int32(unix.Getpgrp())
	say("TIOCSPGRP stdin", ioctlPtr(0, unix.TIOCSPGRP, (*byte)(unsafe.Pointer(&pgrp))))
	say("TIOCSCTTY stdin", ioctlPtr(0, unix.TIOCSCTTY, nil))
	say("TIOCLINUX stdin", ioctlPtr(0, unix.TIOCLINUX, &c))
	var sidErr error
	if sid, err := unix.Getsid(0); err != nil {
		sidErr = err
	} else if sid != os.Getpid() {
		sidErr = fmt.Errorf("session %d, not its own (process %d)", sid, os.Getpid())
	}
	say("sid", sidErr)
	return strings.Join(out, "\n")
}

// ioctlPtr makes the ioctl req on fd with the pointer p, req as it is
// (upper bits included).
func ioctlPtr(fd int, req uint64, p *byte) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(p))); errno != 0 {
		return errno
	}
	return nil
}

// setuidAttack tries to leave set-user-ID and set-group-ID files in dir:
// chmod of a file it wrote, a file created with the bits, and a node
// made with them; and answers the mode each file has in the sandbox.
func setuidAttack(dir string) string {
	var out []string
	say := func(what string, err error) { out = append(out, what+": "+result(err)) }
	suid := filepath.Join(dir, "suid")
	if err := os.WriteFile(suid, []byte("#!/bin/sh\nid\n"), 0o755); err != nil {
		return "writing " + suid + ": " + err.Error()
	}
	say("chmod u+s", unix.Chmod(suid, 0o4755))
	say("chmod g+s", unix.Fchmodat(unix.AT_FDCWD, suid, 0o2755, 0))
	fd, err := unix.Open(filepath.Join(dir, "created"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o6755)
	if err == nil {
		unix.Close(fd)
	}
	say("open O_CREAT 06755", err)
	say("mknod 04755", unix.Mknod(filepath.Join(dir, "node"), unix.S_IFREG|0o4755, 0))
	return strings.Join(out, "\n")
}

// openSocket creates a socket of the family named (vsock, alg, packet,
// inet, inet6, unix, netlink) and closes it.
func openSocket(family string) error {
	f, ok := map[string][2]int{
		"vsock":   {unix.AF_VSOCK, unix.SOCK_STREAM},
		"alg":     {unix.AF_ALG, unix.SOCK_SEQPACKET},
		"packet":  {unix.AF_PACKET, unix.SOCK_DGRAM},
		"inet":    {unix.AF_INET, unix.SOCK_DGRAM},
		"inet6":   {unix.AF_INET6, unix.SOCK_DGRAM},
		"unix":    {unix.AF_UNIX, unix.SOCK_STREAM},
		"netlink": {unix.AF_NETLINK, unix.SOCK_RAW},
	}[family]
	if !ok {
		return fmt.Errorf("no socket family %q", family)
	}
	fd, err := unix.Socket(f[0], f[1]|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// sendUDP sends one datagram to addr.
func sendUDP(addr string) error {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte("escaped"))
	return err
}
