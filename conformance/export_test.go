package conformance

import "github.com/plugkit/plugkit/manager"

// SetNewManager makes the Matrix build its managers with f until restore
// is called.
func SetNewManager(f func(manager.Config) *manager.Manager) (restore func()) {
	old := newManager
	newManager = f
	return func() { newManager = old }
}
