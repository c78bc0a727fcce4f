package conformance

import (
	"context"

	"github.com/plugkit/plugkit/manager"
)

// WithNewManager returns mx making its managers with f rather than
// manager.New (f is given the Finder of the config's source).
func WithNewManager(mx Matrix, f func(*manager.Finder, manager.Config) *manager.Manager) Matrix {
	mx.newManager = f
	return mx
}

// WithScratch returns ctx as mx's suites see it for bin, a module or not.
func WithScratch(ctx context.Context, mx Matrix, bin string, module bool) context.Context {
	return mx.withScratch(ctx, bin, module)
}
