// Package trampoline is the sandbox's re-exec trampoline: the code that
// runs in the host's own binary, re-executed by the sandbox in new
// namespaces, to make the mounts and execute the plugin.
//
// It lives apart from package sandbox, with nothing beneath it but the
// standard library, golang.org/x/sys, internal/osdep and the seccomp
// filter assembler (none of which does work in its init), so that its init function, which
// does the work, runs before the heavy packages of the host (gRPC,
// protobuf) initialize: Go initializes a package once its imports are,
// taking ready packages in import path order, and this one is ready early.
// See package sandbox for the design.
package trampoline
