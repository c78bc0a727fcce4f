// Package framejoin joins a yamux data frame's header to its body on the
// way out. yamux writes a frame's 12-byte header and its body with two
// calls to Write; over a WebAssembly guest's standard input and output
// each Write is a pipe write (and, in the guest, a call out to its host),
// and a reader woken by the header alone has to wait again for the body.
// A Writer holds a data frame's header until the next Write and sends
// both with one.
package framejoin
