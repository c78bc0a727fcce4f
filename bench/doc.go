// Package bench holds plugkit's benchmarks against hashicorp/go-plugin
// v1.8.0 and plain grpc-go, run side by side in one process: cold starts,
// unary round trips, streaming, concurrent callers, manager discovery and
// memory. They are not part of make test; make bench runs them through
// the report driver (./bench/cmd/report), which takes medians of several
// runs and writes BENCHMARKS.md and bench/results.json.
//
// The contenders are small main packages under testdata/, built into a
// temporary directory when the benchmarks start: pkplugin (plugin.Serve),
// gpplugin (go-plugin's Serve), rawserver (grpc-go alone, on a unix socket
// like the others), and the memory hosts pkhost and gphost. All serve the
// same hand-written echo service (internal/echo).
package bench
