package trampoline

// Env names the environment variable that turns a re-executed host
// binary into the trampoline; its value is the JSON of a Spec.
const Env = "PLUGKIT_SANDBOX_INIT"

// Spec is what the sandbox tells the trampoline.
type Spec struct {
	Exe      string   // the plugin's executable, as the host sees it
	Keep     []string // directories bound writable at their own paths
	Dir      string   // the working directory
	TmpSize  int64    // bytes of the private /tmp
	UID, GID int      // the user and group the plugin runs as (never 0)
	Mode     Mode     // how the plugin is isolated
	Landlock int      // the Landlock ABI to restrict the plugin with; 0: none
	// HostNS are the host's namespaces (name: the link /proc/self/ns/name),
	// in mode UserNS, where the trampoline may not read its parent's.
	HostNS map[string]string `json:",omitempty"`
	// Cgroups are descriptors of the cgroup.procs files of the plugin's
	// cgroups, opened by the host: the trampoline joins them first.
	Cgroups []int `json:",omitempty"`
	// NoFile and NProc, when not 0, are the plugin's RLIMIT_NOFILE and
	// RLIMIT_NPROC, soft and hard.
	NoFile, NProc int `json:",omitempty"`
	// Data, when not 0, is the plugin's RLIMIT_DATA in bytes, soft and
	// hard: set last, just before the plugin is executed.
	Data int64 `json:",omitempty"`
	// CPU, when not 0, is the plugin's RLIMIT_CPU in seconds, soft and
	// hard.
	CPU int64 `json:",omitempty"`
	// NoSharedMemory makes the seccomp filter refuse the shared memory
	// RLIMIT_DATA does not count (refuseSharedMemory): set with Data.
	NoSharedMemory bool `json:",omitempty"`
	// SocketDir, in the modes with a mount namespace, is the plugin's
	// socket directory (a real path): the trampoline mounts a small tmpfs
	// of the plugin's own there (SocketDirSize, SocketDirInodes), which
	// the host reaches through /proc/PID/root.
	SocketDir string `json:",omitempty"`
}

// Mode is how the trampoline isolates the plugin.
type Mode int

const (
	// Root: the host is root; the trampoline starts as root in new mount,
	// network, PID, UTS and IPC namespaces, makes its cgroup namespace once
	// in its cgroups, and becomes the plugin's user (Spec.UID, Spec.GID).
	Root Mode = iota
	// UserNS: the host is not root; the trampoline starts as the host's
	// user, with capabilities only in a new user namespace owning the
	// other new namespaces, and stays that user.
	UserNS
	// LandlockOnly: no namespace; the trampoline restricts the plugin
	// with Landlock (and seccomp) alone, as the host's user.
	LandlockOnly
)

// The bounds of the plugin's socket directory (Spec.SocketDir): room for
// sockets and the directories they sit in (each brokered listener takes
// two inodes), and little for anything else (sockets take no pages).
const (
	SocketDirSize   = 1 << 20
	SocketDirInodes = 4096
)
