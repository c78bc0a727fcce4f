package conformance

import "github.com/plugkit/plugkit/manager"

// WithNewManager returns mx making its managers with f rather than
// manager.New (f is given the Finder of the config's source).
func WithNewManager(mx Matrix, f func(*manager.Finder, manager.Config) *manager.Manager) Matrix {
	mx.newManager = f
	return mx
}
