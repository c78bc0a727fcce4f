// Package sandbox runs plugins in a sandbox: a host.Runner that gives a
// plugin no network, a read-only view of the file system, a private /tmp,
// one directory it may write, no view of the host's processes, no
// capabilities, a seccomp filter and Landlock rules, as container runtimes
// do by default, and bounds its memory, CPU, processes and open files. It
// works for a host running as root and for one that is not.
//
//	client, err := host.Start(ctx, host.Command{
//		Path:   "/usr/lib/myapp/plugins/fs",
//		Cookie: cookie,
//		Runner: sandbox.Runner{
//			Writable: "/var/lib/myapp/fs-data",
//			Limits:   sandbox.Limits{Memory: 256 << 20, CPU: 0.5, Processes: 64},
//		},
//	}, host.Options{Versions: []int{1}})
//
// A host that does this calls Init first thing in main: the sandbox
// starts a plugin by running the host's binary again (see "How it starts
// a plugin" below).
//
// # Modes: root, rootless, Landlock alone
//
// Prepare picks the strongest isolation this host gives (Runner.Check
// says which) and fails when that is weaker than Runner.Minimum
// (Namespaces unless set), with one error naming what is missing (the
// privilege, the sysctl kernel.unprivileged_userns_clone,
// user.max_user_namespaces or kernel.apparmor_restrict_unprivileged_userns,
// or Landlock): it never weakens the sandbox silently.
//
//   - Root: a host running as root (or with the capabilities Available
//     lists) makes the namespaces itself, and the plugin runs as
//     Runner.UID and Runner.GID (nobody by default).
//   - Rootless: any other host, where the kernel lets unprivileged users
//     make user namespaces (most distributions do), makes the same
//     namespaces owned by a user namespace of the plugin's own, in which
//     the host's user and group map to themselves: the plugin gets the
//     same network, mount, PID, UTS, IPC and cgroup isolation, read-only
//     file system, private /tmp, minimal /dev (bound device nodes: a
//     user namespace may not make them), masked /proc, no capabilities and
//     seccomp filter, and runs as the host's user (Runner.UID and GID must
//     be 0 then: only root may become another user). The host's user must
//     have no supplementary group, unless Runner.KeepGroups accepts that
//     the plugin keeps them: only a privileged process may drop them.
//   - Landlock alone (Runner.Minimum LandlockOnly, accepted only when
//     asked for): where user namespaces are off, the plugin runs as the
//     host's user, in the host's namespaces, with no_new_privs, no
//     capabilities, the seccomp filter, and Landlock rules: it may read
//     and execute files everywhere but under /dev (the host's terminals),
//     whose minimal set of devices it may read and write, and write only
//     its Writable directory and its socket directory (TMPDIR is
//     Writable, or the socket directory); the seccomp filter refuses it IP
//     sockets (no TCP, UDP or ICMP), and with Landlock ABI 4 TCP is
//     refused besides; with ABI 6 it may not signal
//     processes outside its sandbox nor reach abstract unix sockets
//     outside it. It still sees the host's processes, /tmp and network
//     interfaces.
//
// In the namespace modes Landlock (Linux 5.13+) is added where the kernel
// has it (Runner.Minimum NamespacesAndLandlock requires it), with the same
// rules, the private /tmp writable too: it closes what the mounts leave
// open, such as the plugin's own files in /proc.
//
// # Resource limits
//
// Runner.Limits bounds the plugin's memory, share of CPU, total CPU time,
// processes (and threads) and open files. Runner.Enforcement says what
// enforces each on this host:
//
//   - A root host puts each plugin in a cgroup of its own under a plugkit
//     cgroup it creates: cgroup v2 where the unified hierarchy is mounted
//     alone, cgroup v1 on the hybrid layouts (memory, pids and cpu
//     controllers on v1), through github.com/opencontainers/cgroups. The
//     trampoline joins the cgroup before anything else runs (through
//     descriptors of its cgroup.procs files the host opened), and the
//     cgroup is removed once the plugin has exited.
//   - A rootless host makes no cgroup (a delegated cgroup v2 subtree is
//     not used yet). It bounds processes with RLIMIT_NPROC, which the
//     kernel counts in the plugin's own user namespace, and memory with
//     RLIMIT_DATA, for each of the plugin's processes: the private
//     writable memory it maps (heap, stacks, malloc arenas; the 8 MiB
//     thread stacks of cgo and the race detector's shadow memory too), not the
//     address space it only reserves. RLIMIT_AS would count that too, and
//     a Go program, which reserves hundreds of MiB of address space at
//     start, dies at once under any AS limit a plugin would be given
//     ("failed to reserve page summary memory", measured with Go 1.26).
//     RLIMIT_DATA does not count shared memory, so the seccomp filter
//     then refuses every MAP_SHARED mapping, memfd_create and System V
//     shared memory (EPERM), and RLIMIT_STACK bounds the main stack by
//     the same figure. It refuses a CPU limit, saying so: a share needs a cgroup's cpu
//     controller, and RLIMIT_CPU bounds total seconds, which is no share.
//   - Open files are always RLIMIT_NOFILE, and CPUTime, a total of
//     processor time rather than a share, RLIMIT_CPU; a plugin killed for
//     using it up is reported with a *CPUTimeLimitError.
//
// A plugin the kernel kills for passing its memory limit (the cgroup's
// OOM kill counter says so), or, under RLIMIT_DATA, one that exits with a
// failure after printing a runtime's out-of-memory message (see
// MemoryLimitError for which, and for what this cannot see) is reported
// by the host as a host.UnexpectedExitError (or host.ExitError, before
// its handshake) whose Cause is a *MemoryLimitError naming the limit and
// what enforced it; a manager restarts it as it restarts any plugin that
// exits, and the failed call's error wraps the same MemoryLimitError.
//
// Under RLIMIT_DATA a Go plugin usually dies with "fatal error: runtime:
// out of memory", but not always: when the mapping that fails is one of
// the garbage collector's own, Go 1.26 has been seen to die of a
// segmentation fault instead, which is reported as a plain crash.
//
// # Other systems
//
// The sandbox needs Linux: on Windows, macOS and FreeBSD the package
// compiles, and Prepare, Check, Enforcement and Available return an error
// saying so; the plugin then runs unsandboxed (host.Command.Runner nil),
// as the host's user, with what the system gives every process: its own
// address space and nothing more. Run the host under a restricted account
// there (a Windows restricted token or AppContainer, macOS's App Sandbox,
// a FreeBSD jail), which plugkit does not set up.
//
// # What the plugin gets
//
//   - An unprivileged user: Runner.UID and Runner.GID, 65534 (nobody)
//     by default, never root, with no supplementary group. Prepare gives
//     it the Writable directory (the directory itself; files already in
//     it keep their owner) and the host gives its group the plugin's
//     socket directory (group-writable and sticky, as /tmp is) and its
//     brokered sockets (host.Launch.SocketGroup), so that the plugin can
//     serve and call back. The plugin's executable must be executable,
//     and for a script readable, by that user.
//   - Its own network namespace with only a loopback interface (up): it
//     can listen on and dial 127.0.0.1 among its own sockets, and reach
//     nothing else, not even the host's loopback listeners.
//   - Its own mount namespace, in which every mount is read-only, except:
//     a private, empty tmpfs on /tmp (TMPDIR is set to /tmp); the
//     directory Runner.Writable, at its own path; and, at the path of the
//     plugin's socket directory (host.Launch.SocketDir), a tmpfs of its
//     own, of 1 MiB and 4096 inodes (about 2000 brokered listeners),
//     which the host reaches through the plugin's /proc/PID/root
//     (host.Launch.HostSocketDir): the plugin's unix socket and the host's
//     brokered sockets are shared through it, their addresses translated
//     between the two views. It starts in host.Command.Dir, or with
//     that empty in the host's working directory, unless the private /tmp
//     hides it: then in Runner.Writable, else in /. The writable
//     directories are mounted nosuid and nodev.
//   - A /dev of its own: a read-only tmpfs holding null, zero, full,
//     random and urandom (the host's devices, bound) and the links fd,
//     stdin, stdout and stderr into /proc/self/fd. No disk, no /dev/kmsg,
//     no /dev/shm, no /dev/tty, no pseudo-terminals.
//   - A session of its own, in every mode (as bwrap --new-session makes
//     one): no controlling terminal, so that it can neither type into the
//     terminal of the shell that ran the host nor take its foreground.
//   - An environment of its own: host.Command.Env, the handshake
//     variables, the trace context, TMPDIR, and of the host's own
//     variables only those host.Command.InheritEnv or Runner.InheritEnv
//     names (Runner.InheritAllEnv passes all of them, secrets included).
//   - Its own PID namespace, in which it is process 1 with a /proc of its
//     own: it sees none of the host's processes and cannot signal them.
//     The host still sees and stops it by its host process ID, in its own
//     process group, and the host's death still kills it (Pdeathsig).
//     getppid(2) answers 0 there, so a plugin's own parent watch (plugkit's
//     and go-plugin's) never fires; the death signal does that work.
//     In that /proc, the kernel's settings (/proc/sys: core_pattern,
//     hostname, drop_caches, ...) and /proc/bus, /proc/fs and /proc/irq
//     are read-only mounts, and /proc/kcore, /proc/keys,
//     /proc/sysrq-trigger, /proc/timer_list, /proc/timer_stats,
//     /proc/latency_stats and /proc/sched_debug, where the kernel has
//     them, are /dev/null. /sys is that of its own network namespace,
//     read-only, with /sys/firmware (and /proc/acpi, /proc/asound,
//     /proc/scsi, /sys/devices/virtual/powercap) covered by an empty
//     read-only tmpfs.
//   - Its own UTS, IPC and cgroup namespaces: the host name starts as
//     the host's but is a copy the plugin cannot set; the host's System V
//     shared memory, semaphores and message queues and its POSIX message
//     queues are out of reach; its cgroup is the root of its view (the
//     trampoline makes the cgroup namespace once in its cgroups).
//   - No capabilities: the bounding, permitted, effective, inheritable and
//     ambient sets are emptied and no_new_privs is set before the plugin
//     runs, so it cannot remount, leave its namespaces, or gain privileges
//     through a set-user-ID binary.
//   - A seccomp filter, installed just before the plugin is executed,
//     that answers EPERM (an error the plugin can report, not a kill) to
//     the system calls a container runtime's default profile denies:
//     mount and the new mount API, umount, pivot_root, chroot, unshare,
//     setns, clone with namespace flags, module loading, kexec, bpf,
//     perf_event_open, ptrace, process_vm_readv and writev, kcmp,
//     pidfd_getfd, keyctl, add_key, request_key, open_by_handle_at,
//     name_to_handle_at, userfaultfd, io_uring, fanotify_init, the NUMA
//     memory policy calls, reboot, swapon and swapoff, acct, setting the
//     clocks, syslog, quotactl, iopl and ioperm, personality other than
//     the usual ones, and obsolete calls (uselib, ustat, sysfs, _sysctl,
//     vm86, nfsservctl, ...). clone3 answers ENOSYS, so that the C
//     library falls back to clone, whose flags the filter sees. Calls
//     made through another architecture's interface (the 32-bit one of
//     an amd64 or arm64 kernel) and calls the filter's table does not
//     name answer EPERM too. Further filters, one per call, refuse
//     arguments: the ioctls that take a terminal (TIOCSTI, TIOCSPGRP,
//     TIOCSCTTY, TIOCLINUX, whatever the argument's upper 32 bits, which
//     the kernel ignores);
//     sockets (and socketpairs) of any family but unix, netlink and, in
//     the namespace modes, IP (vsock, AF_ALG, packet...); the set-user-ID
//     and set-group-ID bits in chmod, fchmod, fchmodat, fchmodat2, creat,
//     open, openat, mknod and mknodat, so that no file the plugin leaves
//     runs as its user for another; openat2, whose mode the filter cannot
//     see, answers ENOSYS. The filters are assembled by
//     github.com/elastic/go-seccomp-bpf for amd64 and arm64 (and the
//     other architectures it knows); where it has none, the plugin
//     fails to start, and says why.
//
// What it does not isolate: the plugin can read whatever its user (by
// default nobody; rootless, the host's user) can read in the host's file
// system, world-readable files included; and it can connect to unix
// sockets it finds there that its user may write (a read-only mount does
// not stop connect(2); Landlock ABI 9's unix socket rule is not used
// yet). Plugins that share a user share what that user may do, and any
// process of the host running in the plugin's group may enter its socket
// directory (AutoMTLS still guards the connections): give each plugin its
// own UID and GID to keep them apart, which only a root host can. A plugin
// that asks to listen on
// TCP (host.Command.Listen.Network "tcp") is refused: it would listen on its own
// loopback, which the host cannot reach.
//
// # Why Linux namespaces, not bubblewrap
//
// The sandbox calls the kernel directly (clone flags, mount, mount_setattr,
// prctl, capset) rather than running Debian's bubblewrap: plugkit's tests
// must pass on a fresh clone with only Go installed, and nothing in the
// repository can install bwrap; a Go program also gains no new run-time
// dependency from it. It needs Linux 5.12 or later (mount_setattr) and
// either root (CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SETPCAP, CAP_SETUID,
// CAP_SETGID, CAP_CHOWN and CAP_DAC_OVERRIDE) or unprivileged user
// namespaces; Available says whether this process can. Landlock is
// called directly too, through golang.org/x/sys: the trampoline restricts
// the one thread that executes the plugin, which is all it needs, and
// go-landlock's whole-process enforcement would bring libcap's psx (cgo,
// wrapping pthread_create) into every host binary.
//
// # How it starts a plugin: the re-exec trampoline
//
// Go cannot run code in a child between fork and exec, and the mounts must
// be made inside the child's new namespaces. So Prepare rewrites the
// launch to run the host's own binary (/proc/self/exe) in a new session
// and new mount, network, PID, UTS and IPC namespaces, with the plugin's path,
// the directories to keep writable, the working directory and the user in
// the environment variable PLUGKIT_SANDBOX_INIT. The host's main calls
// Init first thing, as moby's reexec.Init is called: in the re-executed
// binary Init sees that variable and becomes the trampoline, before the
// host parses a flag or starts anything. The binary's package
// initialisers have run by then, as in any run of it (gRPC's and
// protobuf's among them: about 200 packages, 0.7 MB allocated, for this
// package's test binary): keep a host's own init functions light, and
// free of side effects. Prepare refuses to start a plugin in a program
// that did not call Init, saying so: its binary, re-executed, would run
// the host's main rather than the plugin. The trampoline
// removes the variable, joins the plugin's cgroups (Runner.Limits) and
// only then makes its cgroup namespace,
// checks that it really is in namespaces of its own (and refuses
// otherwise, so that setting the variable by mistake can never remount
// the host's file system; rootless, it compares them with the host's,
// named in the spec, as it may not read its parent's), makes the mounts (a fresh /proc
// of the new PID namespace, /dev and the masks among them), brings the
// loopback up, drops every capability, becomes the plugin's user as root
// (asking again for the death signal, which a change of user clears, and
// checking that the host did not die meanwhile), sets the rlimits
// (RLIMIT_DATA last, just before the exec),
// restricts itself with Landlock, installs the seccomp filter, and
// executes the plugin in place: the plugin keeps the
// process ID the host started, and with it the host's process group, death
// signal and socket owner check. The plugin's executable is opened before
// /tmp is replaced, so a binary under /tmp (or a pinned one,
// host.Command.SHA256) still runs; the plugin inherits that one O_PATH
// descriptor of its own executable (an interpreted script's interpreter
// opens it). A host therefore needs nothing but to call Init at the top
// of main and set host.Command.Runner; in every other run of its binary
// Init does nothing, because the variable is not set.
package sandbox
