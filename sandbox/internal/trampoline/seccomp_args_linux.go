package trampoline

import (
	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// The calls the plugin may make only with some arguments (issue 36): each
// argRule refuses one system call when its arguments match any of its
// sets of conditions, and allows it otherwise.
//
// Each rule is loaded as a filter of its own, after the main one, and the
// kernel answers with the strictest verdict of all the filters. One call
// per filter keeps each check independent: the assembler leaves the
// argument a failed condition compared in the accumulator, where the
// check of a next call in the same filter would take it for a system call
// number, and an argument the plugin chose could then pass for another
// call. Calls are refused on their whole 64-bit arguments: a check of the
// low 32 bits alone could be passed by setting the upper ones, which the
// kernel ignores for an int or an ioctl command.
type argRule struct {
	name   string
	errno  seccomp.Action // the answer; 0 for EPERM
	refuse []seccomp.ArgumentConditions
}

// stealTerminal are the ioctl commands that take a terminal: push input
// into it (TIOCSTI, TIOCLINUX's paste), take its foreground (TIOCSPGRP),
// make it the controlling terminal (TIOCSCTTY). The plugin has no
// terminal of the host's (it leads its own session, without /dev/tty):
// these also keep one it could reach some other way from being used
// against the user.
var stealTerminal = []uint64{unix.TIOCSTI, unix.TIOCSPGRP, unix.TIOCSCTTY, unix.TIOCLINUX}

// setID is the mode bits that make a file run as its owner or group:
// refused in every call that sets a mode, so that a plugin leaves no
// set-user-ID file, in a granted directory, that another user could run
// as the plugin's user (the host's, in the rootless and LandlockOnly
// modes).
const setID = unix.S_ISUID | unix.S_ISGID

// socketFamilies returns the socket families the plugin may create in
// mode: unix and netlink sockets, and, in the namespace modes, IP sockets
// on its own network namespace, where only its loopback exists. Any other
// family is refused in every mode: vsock reaches the hypervisor and the
// host's virtual machines through no network namespace, and packet,
// algorithm (AF_ALG) and the rest are kernel code the plugin does not
// need. In LandlockOnly mode, where the plugin shares the host's network
// and Landlock bounds TCP alone, IP sockets are refused too: no UDP, no
// ICMP.
func socketFamilies(mode Mode) []uint64 {
	f := []uint64{unix.AF_UNIX, unix.AF_NETLINK}
	if mode != LandlockOnly {
		f = append(f, unix.AF_INET, unix.AF_INET6)
	}
	return f
}

// argRules returns the rules of the plugin in mode.
func argRules(mode Mode) []argRule {
	// An ioctl command is 32 bits, which the kernel reads from the low
	// half of the argument. Programs leave the upper half 0, or, with a C
	// library that takes the command as an int (musl), all ones when the
	// command's bit 31 is set, which no command here has: each is refused
	// with either upper half, and any other upper half is no program's.
	const signExtended = 0xffffffff00000000
	var tty []seccomp.ArgumentConditions
	for _, c := range stealTerminal {
		tty = append(tty,
			seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.Equal, Value: c}},
			seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.Equal, Value: c | signExtended}})
	}
	tty = append(tty, seccomp.ArgumentConditions{
		{Argument: 1, Operation: seccomp.GreaterThan, Value: 0xffffffff},
		{Argument: 1, Operation: seccomp.LessThan, Value: signExtended},
	})
	var family seccomp.ArgumentConditions
	for _, f := range socketFamilies(mode) {
		family = append(family, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: f})
	}
	mode0 := func(arg uint32) []seccomp.ArgumentConditions {
		return []seccomp.ArgumentConditions{{{Argument: arg, Operation: seccomp.BitsSet, Value: setID}}}
	}
	return []argRule{
		{name: "ioctl", refuse: tty},
		{name: "socket", refuse: []seccomp.ArgumentConditions{family}},
		{name: "socketpair", refuse: []seccomp.ArgumentConditions{family}},
		{name: "chmod", refuse: mode0(1)},
		{name: "fchmod", refuse: mode0(1)},
		{name: "fchmodat", refuse: mode0(2)},
		{name: "fchmodat2", refuse: mode0(2)},
		{name: "creat", refuse: mode0(1)},
		{name: "open", refuse: mode0(2)},
		{name: "openat", refuse: mode0(3)},
		{name: "mknod", refuse: mode0(1)},
		{name: "mknodat", refuse: mode0(2)},
		// openat2's mode is in memory, out of a filter's sight: "no such
		// call", and the C library and Go fall back to openat.
		{name: "openat2", errno: errnoENOSYS, refuse: []seccomp.ArgumentConditions{nil}},
	}
}

// argPolicies returns one policy per rule of argRules(mode) that this
// architecture's table names (creat, open and mknod are missing on
// arm64, say).
func argPolicies(mode Mode) ([]seccomp.Policy, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	var out []seccomp.Policy
	for _, r := range argRules(mode) {
		if _, ok := info.SyscallNames[r.name]; !ok {
			continue
		}
		action := r.errno
		if action == 0 {
			action = seccomp.ActionErrno
		}
		g := seccomp.SyscallGroup{Action: action}
		for _, c := range r.refuse {
			if len(c) == 0 {
				g.Names = append(g.Names, r.name)
				continue
			}
			g.NamesWithCondtions = append(g.NamesWithCondtions, seccomp.NameWithConditions{Name: r.name, Conditions: c})
		}
		out = append(out, seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{g}})
	}
	return out, nil
}
