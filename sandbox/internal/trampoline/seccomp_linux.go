package trampoline

import (
	"fmt"
	"sort"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// deniedSyscalls are the system calls the plugin may not make, as a
// container runtime's default profile denies them to a container without
// capabilities: they mount and change namespaces, load kernel code or
// eBPF, trace or read other processes, reach the kernel's key store, set
// the clocks, reboot, swap, or belong to obsolete interfaces. Most would
// fail for want of a capability anyway; the filter also closes the ones
// an unprivileged process may make (unshare of a user namespace, keyctl,
// ptrace of its own children, userfaultfd, io_uring, perf_event_open where
// the kernel allows it), and keeps the kernel code behind all of them out
// of the plugin's reach. The names missing on an architecture (iopl and
// vm86 on arm64, say) are skipped.
var deniedSyscalls = []string{
	// Mounts and namespaces.
	"mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount",
	"fspick", "open_tree", "move_mount", "mount_setattr", "unshare", "setns",
	// Kernel code: modules, kexec, eBPF, perf.
	"init_module", "finit_module", "delete_module", "create_module", "get_kernel_syms",
	"query_module", "kexec_load", "kexec_file_load", "bpf", "perf_event_open", "lookup_dcookie",
	// Other processes and the kernel's objects.
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"keyctl", "add_key", "request_key", "open_by_handle_at", "name_to_handle_at",
	"userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "fanotify_init",
	// Memory placement across NUMA nodes.
	"mbind", "set_mempolicy", "get_mempolicy", "move_pages",
	// The machine: time, power, swap, accounting, quotas, the log, ports.
	"reboot", "swapon", "swapoff", "acct", "settimeofday", "stime", "clock_settime",
	"clock_adjtime", "syslog", "quotactl", "quotactl_fd", "iopl", "ioperm", "vhangup",
	// Obsolete interfaces.
	"uselib", "ustat", "sysfs", "_sysctl", "vm86", "vm86old", "nfsservctl",
}

// Personalities the plugin may set (as container runtimes allow): Linux,
// its 32-bit flavour, the 2.6-version flavour, both, and the query.
var allowedPersonalities = []uint64{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// namespaceFlags are clone(2)'s flags that make new namespaces; a plugin
// without capabilities could make a user namespace with them, and the
// others along with it.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// errnoENOSYS answers "no such system call": clone3(2)'s arguments are in
// memory, out of a filter's sight, so the filter says it does not exist,
// and the C library falls back to clone(2), whose flags it checks.
const errnoENOSYS = seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)

// policy builds the plugin's seccomp policy for this architecture: the
// denied calls answer EPERM, clone3(2) ENOSYS, clone(2) is allowed without
// namespace flags and personality(2) with allowedPersonalities only, and
// every other call the architecture's table names is allowed. The
// default, for calls the table does not name, for clone(2) and
// personality(2) with other arguments, and for calls made through another
// architecture's interface (the 32-bit one of an amd64 or arm64 kernel,
// which would otherwise slip past the list), is EPERM.
//
// The group that looks at arguments comes last: the assembler leaves the
// argument it compared in the accumulator, where a later group would
// take it for the system call's number.
func policy() (seccomp.Policy, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return seccomp.Policy{}, fmt.Errorf("no seccomp system call table for this architecture: %w", err)
	}
	special := map[string]bool{"clone3": true, "clone": true, "personality": true}
	denied := map[string]bool{}
	var deny []string
	for _, name := range deniedSyscalls {
		if _, ok := info.SyscallNames[name]; ok {
			deny = append(deny, name)
			denied[name] = true
		}
	}
	var allow []string
	for name := range info.SyscallNames {
		if !denied[name] && !special[name] {
			allow = append(allow, name)
		}
	}
	sort.Strings(allow)
	withArgs := []seccomp.NameWithConditions{{
		Name:       "clone",
		Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsNotSet, Value: namespaceFlags}},
	}}
	for _, p := range allowedPersonalities {
		withArgs = append(withArgs, seccomp.NameWithConditions{
			Name:       "personality",
			Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: p}},
		})
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionErrno,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: deny},
			{Action: errnoENOSYS, Names: []string{"clone3"}},
			{Action: seccomp.ActionAllow, Names: allow},
			{Action: seccomp.ActionAllow, NamesWithCondtions: withArgs},
		},
	}, nil
}

// loadSeccomp installs the plugin's filters on the calling thread, which
// executes the plugin next: the policy (refusing shared memory too with
// sp.NoSharedMemory: refuseSharedMemory), then the rules on arguments of
// sp.Mode (argPolicies); no_new_privs is already set.
func loadSeccomp(sp Spec) error {
	p, err := policy()
	if err != nil {
		return err
	}
	if sp.NoSharedMemory {
		info, err := arch.GetInfo("")
		if err != nil {
			return err
		}
		p = refuseSharedMemory(p, info)
	}
	args, err := argPolicies(sp.Mode)
	if err != nil {
		return err
	}
	for _, p := range append([]seccomp.Policy{p}, args...) {
		if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Policy: p}); err != nil {
			return err
		}
	}
	return nil
}
