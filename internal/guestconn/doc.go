// Package guestconn is the connection between a host and a WebAssembly
// (wasip1) guest it runs in its own process: an in-memory duplex pipe,
// and the name under which the guest finds its end (Dir, Name), which
// both sides import. The host's runtime (package wasmhost) shows the
// guest's end as a file the guest opens and makes its descriptor 0, where
// wazero's poll_oneoff waits on it (WaitReadable); the host's end is a
// net.Conn. No OS pipe, and no system call, is involved per frame.
package guestconn
