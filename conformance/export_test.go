package conformance

import "github.com/plugkit/plugkit/manager"

// SetNewManager makes the Matrix build its managers with f (given the
// Finder of the config's source) until restore is called.
func SetNewManager(f func(*manager.Finder, manager.Config) *manager.Manager) (restore func()) {
	old := newManager
	newManager = f
	return func() { newManager = old }
}
