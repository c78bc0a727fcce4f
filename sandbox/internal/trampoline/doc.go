// Package trampoline is the sandbox's re-exec trampoline: the code that
// runs in the host's own binary, re-executed by the sandbox in new
// namespaces, to make the mounts and execute the plugin.
//
// It lives apart from package sandbox, with nothing beneath it but the
// standard library, golang.org/x/sys, internal/osdep and the seccomp
// filter assembler, none of which does work in its init. Nothing runs
// by being imported: the host's main calls sandbox.Init, which calls
// Init here, first thing.
// See package sandbox for the design.
package trampoline
