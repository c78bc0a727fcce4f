package conformance

import "github.com/plugkit/plugkit/manager"

// WithNewManager returns mx making its managers with f rather than
// manager.New.
func WithNewManager(mx Matrix, f func(manager.Config) *manager.Manager) Matrix {
	mx.newManager = f
	return mx
}
