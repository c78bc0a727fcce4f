package trampoline

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The rules on arguments (argPolicies), each run in x/net/bpf's virtual
// machine: a call is refused when any filter refuses it, as the kernel
// does with stacked filters.
func TestSeccompArgRules(t *testing.T) {
	_, info := seccompVM(t)
	native := uint32(info.ID)
	verdicts := func(mode Mode, name string, args ...uint64) uint32 {
		t.Helper()
		pols, err := argPolicies(mode)
		if err != nil {
			t.Fatal(err)
		}
		nr, ok := info.SyscallNames[name]
		if !ok {
			t.Fatalf("no system call %s on %s", name, info.Name)
		}
		out := verdictAllow
		for _, p := range pols {
			if v := verdict(t, policyVM(t, p), native, nr, args...); v != verdictAllow {
				out = v
			}
		}
		return out
	}
	allow, eperm, enosys := verdictAllow, verdictEPERM, verdictENOSYS
	for _, tc := range []struct {
		mode Mode
		name string
		args []uint64
		want uint32
	}{
		{Root, "ioctl", []uint64{0, unix.TIOCSTI}, eperm},
		{UserNS, "ioctl", []uint64{0, unix.TIOCSTI | 1<<32}, eperm},
		{LandlockOnly, "ioctl", []uint64{0, unix.TIOCSPGRP}, eperm},
		{Root, "ioctl", []uint64{0, unix.TIOCSCTTY}, eperm},
		{Root, "ioctl", []uint64{0, unix.TIOCLINUX}, eperm},
		{Root, "ioctl", []uint64{0, unix.TIOCSTI | 0xffffffff00000000}, eperm},
		{Root, "ioctl", []uint64{0, unix.TIOCSTI | 0x7fffffff00000000}, eperm},
		{Root, "ioctl", []uint64{0, unix.TIOCGWINSZ}, allow},
		{Root, "ioctl", []uint64{0, 0xffffffff80086601}, allow}, // FS_IOC_GETFLAGS through musl's int
		{Root, "ioctl", []uint64{0, 0x80086601}, allow},
		{Root, "ioctl", []uint64{0, unix.TIOCINQ}, allow},
		{Root, "socket", []uint64{unix.AF_UNIX}, allow},
		{Root, "socket", []uint64{unix.AF_INET}, allow},
		{Root, "socket", []uint64{unix.AF_INET6}, allow},
		{Root, "socket", []uint64{unix.AF_NETLINK}, allow},
		{Root, "socket", []uint64{unix.AF_VSOCK}, eperm},
		{UserNS, "socket", []uint64{unix.AF_VSOCK}, eperm},
		{LandlockOnly, "socket", []uint64{unix.AF_VSOCK}, eperm},
		{Root, "socket", []uint64{unix.AF_ALG}, eperm},
		{Root, "socket", []uint64{unix.AF_PACKET}, eperm},
		{Root, "socket", []uint64{unix.AF_UNIX | 1<<32}, eperm},
		{LandlockOnly, "socket", []uint64{unix.AF_INET}, eperm},
		{LandlockOnly, "socket", []uint64{unix.AF_INET6}, eperm},
		{LandlockOnly, "socket", []uint64{unix.AF_UNIX}, allow},
		{Root, "socketpair", []uint64{unix.AF_UNIX}, allow},
		{Root, "chmod", []uint64{0, 0o755}, allow},
		{Root, "chmod", []uint64{0, 0o4755}, eperm},
		{Root, "fchmod", []uint64{0, 0o2755}, eperm},
		{Root, "fchmodat", []uint64{0, 0, 0o6755}, eperm},
		{Root, "fchmodat", []uint64{0, 0, 0o644}, allow},
		{Root, "openat", []uint64{0, 0, unix.O_CREAT, 0o4755}, eperm},
		{Root, "openat", []uint64{0, 0, unix.O_CREAT, 0o644}, allow},
		{Root, "openat2", nil, enosys},
		{Root, "mknodat", []uint64{0, 0, unix.S_IFREG | 0o4755}, eperm},
		{Root, "read", nil, allow},
	} {
		if got := verdicts(tc.mode, tc.name, tc.args...); got != tc.want {
			t.Errorf("mode %d: %s%#o: the filters answer %#x; want %#x", tc.mode, tc.name, tc.args, got, tc.want)
		}
	}
}
