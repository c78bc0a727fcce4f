package trampoline

import (
	"encoding/binary"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// verdict runs the plugin's filter, in x/net/bpf's virtual machine, on one
// system call as the kernel describes it (struct seccomp_data), and
// returns the action: unix.SECCOMP_RET_ALLOW, or SECCOMP_RET_ERRNO with
// the errno in the low bits. The kernel's filter loads 32-bit words in the
// machine's byte order, the virtual machine (made for packets) in
// network order: each word is written so that both read the same value.
func verdict(t *testing.T, vm *bpf.VM, auditArch uint32, nr int, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	word := func(off int, v uint32) { binary.BigEndian.PutUint32(data[off:], v) }
	word(0, uint32(nr))
	word(4, auditArch)
	little := binary.NativeEndian.Uint16([]byte{1, 0}) == 1
	for i, a := range args {
		lo, hi := 16+8*i, 16+8*i+4
		if !little {
			lo, hi = hi, lo
		}
		word(lo, uint32(a))
		word(hi, uint32(a>>32))
	}
	out, err := vm.Run(data)
	if err != nil {
		t.Fatalf("running the filter on system call %d: %v", nr, err)
	}
	return uint32(out)
}

// seccompVM assembles the plugin's filter and loads it into x/net/bpf's
// virtual machine, and describes the machine's architecture.
func seccompVM(t *testing.T) (*bpf.VM, *arch.Info) {
	t.Helper()
	p, err := policy()
	if err != nil {
		t.Fatal(err)
	}
	vm := policyVM(t, p)
	info, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	return vm, info
}

// policyVM assembles p and loads it into x/net/bpf's virtual machine.
func policyVM(t *testing.T, p seccomp.Policy) *bpf.VM {
	t.Helper()
	insts, err := p.Assemble()
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

// The filter's answers, as verdict returns them.
var (
	verdictAllow  = uint32(unix.SECCOMP_RET_ALLOW)
	verdictEPERM  = uint32(unix.SECCOMP_RET_ERRNO | unix.EPERM)
	verdictENOSYS = uint32(unix.SECCOMP_RET_ERRNO | unix.ENOSYS)
)

// seccompCase is one system call, by name, with its arguments, and the
// filter's answer to it.
type seccompCase struct {
	name string
	args []uint64
	want uint32
}

// seccompCases are the system calls the policy allows and refuses.
func seccompCases() []seccompCase {
	allow, eperm, enosys := verdictAllow, verdictEPERM, verdictENOSYS
	return []seccompCase{
		{"read", nil, allow},
		{"futex", nil, allow},
		{"execve", nil, allow},
		{"mount", nil, eperm},
		{"umount2", nil, eperm},
		{"pivot_root", nil, eperm},
		{"unshare", []uint64{unix.CLONE_NEWUSER}, eperm},
		{"setns", nil, eperm},
		{"ptrace", []uint64{unix.PTRACE_ATTACH}, eperm},
		{"process_vm_readv", nil, eperm},
		{"keyctl", nil, eperm},
		{"add_key", nil, eperm},
		{"bpf", nil, eperm},
		{"perf_event_open", nil, eperm},
		{"init_module", nil, eperm},
		{"finit_module", nil, eperm},
		{"kexec_load", nil, eperm},
		{"open_by_handle_at", nil, eperm},
		{"userfaultfd", nil, eperm},
		{"reboot", nil, eperm},
		{"clock_settime", nil, eperm},
		{"clone3", nil, enosys},
		// A thread (glibc's and Go's flags) and a fork may be made; a
		// namespace may not.
		{"clone", []uint64{unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID}, allow},
		{"clone", []uint64{uint64(unix.SIGCHLD)}, allow},
		{"clone", []uint64{unix.CLONE_VFORK | unix.CLONE_VM | unix.CLONE_PIDFD | uint64(unix.SIGCHLD)}, allow}, // Go's os/exec
		{"clone", []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, eperm},
		{"clone", []uint64{unix.CLONE_NEWNET}, eperm},
		{"personality", []uint64{0xffffffff}, allow},
		{"personality", []uint64{0}, allow},
		{"personality", []uint64{0x0040000}, eperm}, // ADDR_NO_RANDOMIZE,
	}
}

func TestSeccompPolicy(t *testing.T) {
	vm, info := seccompVM(t)
	native := uint32(info.ID)
	nr := func(name string) int {
		n, ok := info.SyscallNames[name]
		if !ok {
			t.Fatalf("no system call %s on %s", name, info.Name)
		}
		return n
	}
	for _, tc := range seccompCases() {
		if got := verdict(t, vm, native, nr(tc.name), tc.args...); got != tc.want {
			t.Errorf("%s%x: the filter answers %#x; want %#x", tc.name, tc.args, got, tc.want)
		}
	}
	// A system call number the table does not name, and any call made
	// through another architecture's interface (the 32-bit one), are
	// refused.
	if got := verdict(t, vm, native, 4000); got != verdictEPERM {
		t.Errorf("an unknown system call: %#x; want %#x", got, verdictEPERM)
	}
	var foreign uint32
	switch info.Name {
	case "x86_64":
		foreign = uint32(arch.I386.ID)
	case "aarch64":
		foreign = uint32(arch.ARM.ID)
	}
	if foreign != 0 {
		if got := verdict(t, vm, foreign, 3); got != verdictEPERM { // read on i386 and arm
			t.Errorf("a 32-bit system call: %#x; want %#x", got, verdictEPERM)
		}
	}
	// The filter never kills: every call, known or not, is allowed or
	// answered with an error the plugin can report.
	for n := 0; n < 1024; n++ {
		if got := verdict(t, vm, native, n); got != verdictAllow && got&unix.SECCOMP_RET_ACTION_FULL != unix.SECCOMP_RET_ERRNO {
			t.Errorf("system call %d (%s): the filter answers %#x; want allow or an errno", n, info.SyscallNumbers[n], got)
		}
	}
}
