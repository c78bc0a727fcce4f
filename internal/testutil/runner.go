package testutil

// RunnerFunc adapts a function to an interface whose one method is
// Prepare(L) error: host.Runner, with L *host.Launch
// (testutil.RunnerFunc[*host.Launch]), without testutil importing host.
type RunnerFunc[L any] func(l L) error

// Prepare calls f(l).
func (f RunnerFunc[L]) Prepare(l L) error { return f(l) }
