//go:build !linux

package manager

import "context"

// watch watches the set by polling it every PollInterval: systems other
// than Linux report no change here.
func (f *Finder) watch(ctx context.Context, w watchSet) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	startPoll(ctx, w, f.pollInterval(), out)
	return out, nil
}
