package trampoline

import (
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Under an rlimit (refuseSharedMemory) the filter refuses shared memory
// and still allows the private mappings every runtime makes, and the rest
// of the policy as before; without it, shared mappings are allowed.
func TestSeccompRefusesSharedMemory(t *testing.T) {
	plain, info := seccompVM(t)
	p, err := policy()
	if err != nil {
		t.Fatal(err)
	}
	p = refuseSharedMemory(p, info)
	insts, err := p.Assemble()
	if err != nil {
		t.Fatal(err)
	}
	bounded, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	native := uint32(info.ID)
	allow, eperm := verdictAllow, verdictEPERM
	private := uint64(unix.MAP_PRIVATE | unix.MAP_ANONYMOUS)
	for _, tc := range append(seccompCases(), []seccompCase{
		{"mmap", []uint64{0, 1 << 30, unix.PROT_READ | unix.PROT_WRITE, unix.MAP_SHARED | unix.MAP_ANONYMOUS, ^uint64(0), 0}, eperm},
		{"mmap", []uint64{0, 1 << 30, unix.PROT_READ | unix.PROT_WRITE, unix.MAP_SHARED_VALIDATE | unix.MAP_ANONYMOUS, ^uint64(0), 0}, eperm},
		{"mmap", []uint64{0, 1 << 30, unix.PROT_READ, unix.MAP_SHARED, 3, 0}, eperm},                        // /dev/zero, or any file
		{"mmap", []uint64{0, 64 << 20, unix.PROT_NONE, private | unix.MAP_NORESERVE, ^uint64(0), 0}, allow}, // Go's heap reservation
		{"mmap", []uint64{0, 1 << 20, unix.PROT_READ | unix.PROT_WRITE, private | unix.MAP_FIXED, ^uint64(0), 0}, allow},
		{"mmap", []uint64{0, 4096, unix.PROT_READ | unix.PROT_EXEC, unix.MAP_PRIVATE | unix.MAP_DENYWRITE, 3, 0}, allow}, // the loader
		{"memfd_create", nil, eperm},
		{"memfd_secret", nil, eperm},
		{"shmget", nil, eperm},
		{"shmat", nil, eperm},
		{"shmdt", nil, allow},
		{"munmap", nil, allow},
		{"mremap", nil, allow},
	}...) {
		n, ok := info.SyscallNames[tc.name]
		if !ok {
			t.Fatalf("no system call %s on %s", tc.name, info.Name)
		}
		if got := verdict(t, bounded, native, n, tc.args...); got != tc.want {
			t.Errorf("under an rlimit, %s%x: the filter answers %#x; want %#x", tc.name, tc.args, got, tc.want)
		}
	}
	// Without the rules, shared memory is the cgroup's to count.
	for _, name := range []string{"memfd_create", "shmget"} {
		if got := verdict(t, plain, native, info.SyscallNames[name]); got != allow {
			t.Errorf("without an rlimit, %s: %#x; want allowed", name, got)
		}
	}
	if got := verdict(t, plain, native, info.SyscallNames["mmap"], 0, 4096, unix.PROT_READ, unix.MAP_SHARED, 3, 0); got != allow {
		t.Errorf("without an rlimit, a shared mapping: %#x; want allowed", got)
	}
}
