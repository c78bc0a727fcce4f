package trampoline

import (
	"slices"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// The rules of this file bound the memory of a plugin whose memory limit
// is RLIMIT_DATA (Spec.NoSharedMemory): the kernel counts a process's
// private writable mappings there, and not the shared memory it makes,
// which a cgroup counts but an rlimit does not. Without them a plugin held
// a gigabyte under a limit of 256 MiB four ways: MAP_SHARED|MAP_ANONYMOUS,
// a memfd it wrote, a MAP_SHARED mapping of /dev/zero (shared memory too,
// though the flags do not say anonymous), System V shared memory. So,
// under an rlimit, the filter refuses (EPERM) every shared mapping
// (mmap with MAP_SHARED or MAP_SHARED_VALIDATE: a file descriptor does not
// tell /dev/zero from a file on disk), memfd_create and memfd_secret, and
// System V shared memory (shmget, shmat, and the ipc multiplexer of the
// 32-bit architectures). A tmpfs file the plugin maps is no way round:
// its only tmpfs, /tmp, is bounded by Runner.TmpSize, and /dev/shm is not
// in its /dev. The Go runtime (and so a Go plugin, gRPC's included) maps
// only private memory; the race detector too.

// sharedMemoryCalls are the calls refused outright under an rlimit.
var sharedMemoryCalls = []string{"memfd_create", "memfd_secret", "shmget", "shmat", "ipc"}

// mapCalls are the mmap calls whose flags (argument 3) the filter checks.
var mapCalls = []string{"mmap", "mmap2"}

// refuseSharedMemory returns p with the rules above: the calls of
// sharedMemoryCalls refused, and those of mapCalls allowed only without
// MAP_SHARED (a bit MAP_SHARED_VALIDATE has too). Like policy, it keeps
// the group that looks at arguments last.
func refuseSharedMemory(p seccomp.Policy, info *arch.Info) seccomp.Policy {
	var deny, maps []string
	for _, name := range sharedMemoryCalls {
		if _, ok := info.SyscallNames[name]; ok {
			deny = append(deny, name)
		}
	}
	for _, name := range mapCalls {
		if _, ok := info.SyscallNames[name]; ok {
			maps = append(maps, name)
		}
	}
	drop := append(slices.Clone(deny), maps...)
	groups := []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: deny}}
	for _, g := range p.Syscalls {
		g.Names = slices.DeleteFunc(slices.Clone(g.Names), func(n string) bool { return slices.Contains(drop, n) })
		groups = append(groups, g)
	}
	last := &groups[len(groups)-1]
	if last.Action != seccomp.ActionAllow || len(last.NamesWithCondtions) == 0 {
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionAllow})
		last = &groups[len(groups)-1]
	}
	for _, name := range maps {
		last.NamesWithCondtions = append(slices.Clone(last.NamesWithCondtions), seccomp.NameWithConditions{
			Name:       name,
			Conditions: seccomp.ArgumentConditions{{Argument: 3, Operation: seccomp.BitsNotSet, Value: unix.MAP_SHARED}},
		})
	}
	p.Syscalls = groups
	return p
}
