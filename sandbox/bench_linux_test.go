package sandbox_test

import (
	"testing"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/sandbox"
)

// BenchmarkStartClose measures a plugin's Start and Close with the
// default runner (exec) and in the sandbox, in the same run: the ratio is
// what the sandbox's namespaces, mounts and re-exec cost.
func BenchmarkStartClose(b *testing.B) {
	for _, bc := range []struct {
		name   string
		runner host.Runner
	}{{"exec", nil}, {"sandbox", sandbox.Runner{}}} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.runner != nil {
				if err := sandbox.Available(); err != nil {
					b.Fatal(err)
				}
			}
			cfg := config(b, sandbox.Runner{})
			cfg.Runner = bc.runner
			for b.Loop() {
				cfg.startClose(b)
			}
		})
	}
}
