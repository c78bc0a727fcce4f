// Package filehash computes the SHA-256 of plugin binaries for checksum
// pins and the describe cache, giving up when the caller's context ends, so
// that a huge or endless file cannot outlast a deadline.
package filehash
