package plugin

import (
	"context"
	"time"
)

// watchParent closes the returned channel when the process that started
// this one is gone, or ctx ends. How a dead parent shows is the system's
// business (parentProbe: re-parenting on unix, the parent's process
// handle on Windows); polling it works whatever the host is and needs no
// help from it.
func watchParent(ctx context.Context) <-chan struct{} {
	gone, release := parentProbe()
	if gone == nil {
		return nil // the system cannot tell (a WebAssembly guest)
	}
	return pollGone(ctx, parentPollInterval, gone, release)
}

// pollGone calls gone every interval until it reports true, and then
// closes the returned channel, or until ctx ends. release runs once the
// polling stops, either way.
func pollGone(ctx context.Context, interval time.Duration, gone func() bool, release func()) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer release()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if gone() {
					close(ch)
					return
				}
			}
		}
	}()
	return ch
}
