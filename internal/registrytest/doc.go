// Package registrytest runs a real OCI registry, the CNCF distribution
// registry in process, on a loopback listener for tests: plain HTTP by
// default, or with TLS and htpasswd basic auth. It stores blobs with the
// registry's filesystem driver in the test's temporary directory: its
// in-memory driver grows an upload's buffer by each write's size, so a
// 19 MB plugin costs gigabytes of copying (minutes under the race
// detector).
package registrytest
