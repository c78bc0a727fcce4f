// Package registrytest runs a real OCI registry for tests, the CNCF
// distribution registry, on a loopback listener: plain HTTP by default,
// or with TLS and htpasswd basic auth. The registry is a program of its
// own (testdata/registry), built once per test binary without the race
// detector, so that the race builds of the packages that use it do not
// compile or link the registry's dependencies (distribution, go-redis,
// the OpenTelemetry exporters: 133 packages no other code imports). It
// stores blobs with the registry's filesystem driver in the test's
// temporary directory: its in-memory driver grows an upload's buffer by
// each write's size, so a 19 MB plugin costs gigabytes of copying.
//
// A test binary that uses it removes the program after its tests:
//
//	os.Exit(testutil.Main(testutil.Then(m, registrytest.Remove)))
package registrytest
