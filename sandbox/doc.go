// Package sandbox runs plugins in a sandbox: a host.Runner that gives a
// plugin no network, a read-only view of the file system, a private /tmp,
// one directory it may write, and no view of the host's processes.
//
//	client, err := host.Start(ctx, host.Config{
//		Path:     "/usr/lib/myapp/plugins/fs",
//		Cookie:   cookie,
//		Versions: []int{1},
//		Runner:   sandbox.Runner{Writable: "/var/lib/myapp/fs-data"},
//	})
//
// # What the plugin gets
//
//   - Its own network namespace with only a loopback interface (up): it
//     can listen on and dial 127.0.0.1 among its own sockets, and reach
//     nothing else, not even the host's loopback listeners.
//   - Its own mount namespace, in which every mount is read-only, except:
//     a private, empty tmpfs on /tmp (TMPDIR is set to /tmp); the
//     directory Runner.Writable, at its own path; and the plugin's socket
//     directory (host.Launch.SocketDir), also at its own path. The host
//     and the plugin both see that directory, so the plugin's unix socket
//     and the host's brokered sockets are shared through it and no
//     address needs translating. /sys is that of its own network
//     namespace (read-only too). It starts in host.Config.Dir, or with
//     that empty in the host's working directory, unless the private /tmp
//     hides it: then in Runner.Writable, else in /.
//   - Its own PID namespace, in which it is process 1 with a /proc of its
//     own: it sees none of the host's processes and cannot signal them.
//     The host still sees and stops it by its host process ID, in its own
//     process group, and the host's death still kills it (Pdeathsig).
//     getppid(2) answers 0 there, so a plugin's own parent watch (plugkit's
//     and go-plugin's) never fires; the death signal does that work.
//   - No capabilities: the bounding, permitted, effective, inheritable and
//     ambient sets are emptied and no_new_privs is set before the plugin
//     runs, so it cannot remount, leave its namespaces, or gain privileges
//     through a set-user-ID binary.
//
// What it does not isolate: the plugin keeps the host's user and group
// IDs, so it can read whatever that user can read; and it can connect to
// unix sockets it finds in the file system (a read-only mount does not
// stop connect(2)). Run the host as a dedicated user to narrow these. A
// plugin that asks to listen on TCP (host.Config.Network "tcp") is
// refused: it would listen on its own loopback, which the host cannot
// reach.
//
// # Why Linux namespaces, not bubblewrap
//
// The sandbox calls the kernel directly (clone flags, mount, mount_setattr,
// prctl, capset) rather than running Debian's bubblewrap: plugkit's tests
// must pass on a fresh clone with only Go installed, and nothing in the
// repository can install bwrap; a Go program also gains no new run-time
// dependency from it. It needs the privileges to make namespaces and
// mounts (root, or CAP_SYS_ADMIN, CAP_NET_ADMIN and CAP_SETPCAP) and Linux 5.12 or
// later (mount_setattr). Available says whether this process has them.
// On other systems the package compiles, and Prepare and Available return
// an error saying the sandbox needs Linux.
//
// # How it starts a plugin: the re-exec trampoline
//
// Go cannot run code in a child between fork and exec, and the mounts must
// be made inside the child's new namespaces. So Prepare rewrites the
// launch to run the host's own binary (/proc/self/exe) in new mount,
// network and PID namespaces, with the plugin's path, the directories to
// keep writable and the working directory in the environment variable
// PLUGKIT_SANDBOX_INIT. The init function of sandbox/internal/trampoline,
// which this package imports, sees that variable in the new process; it
// depends on the standard library alone, so it runs before the host's
// heavier packages (gRPC, protobuf) initialize, and before main. It
// removes the variable, checks that it really is in namespaces of its own
// (and refuses otherwise, so that setting the variable by mistake can
// never remount the host's file system), makes the mounts (a fresh /proc
// of the new PID namespace among them), brings the loopback up, drops
// every capability, and executes the plugin in place: the plugin keeps the
// process ID the host started, and with it the host's process group, death
// signal and socket owner check. The plugin's executable is opened before
// /tmp is replaced, so a binary under /tmp (or a pinned one,
// host.Config.SHA256) still runs; the plugin inherits that one O_PATH
// descriptor of its own executable (an interpreted script's interpreter
// opens it). A host therefore needs nothing but to import this package and
// set host.Config.Runner; in every other run of its binary the hook does
// nothing, because the variable is not set.
package sandbox
