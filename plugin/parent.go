package plugin

import (
	"context"
	"os"
	"time"

	"github.com/plugkit/plugkit/wire"
)

// EnvHostPID is where a host may pass its process id to the plugin it
// launches. A unix plugin whose parent, when it starts, is not that process
// and who finds that process gone knows that its host died before the
// plugin could start watching it, and exits at once. A plugin run through
// a wrapper (a shell script, a sandbox) finds the host alive, and watches
// its own parent. Hosts that do not set it (go-plugin's) lose nothing:
// the plugin then watches the parent it finds at its start.
const EnvHostPID = wire.EnvHostPID

// watchParent closes the returned channel when the process that started
// this one is gone, or ctx ends. How a dead parent shows is the system's
// business (parentProbe: re-parenting on unix, the parent's process
// handle on Windows); polling it works whatever the host is and needs no
// help from it. A plugin a host launched watches from its start instead
// (atStart); this is for a Run without that watch.
func watchParent(ctx context.Context, lookup func(string) (string, bool)) <-chan struct{} {
	gone, release := parentProbe(lookup)
	if gone == nil {
		return nil // the system cannot tell (a WebAssembly guest)
	}
	return pollGone(ctx, parentPollInterval, nil, gone, release)
}

// pollGone calls gone at once, then every interval and whenever wake
// delivers (nil: never), until it reports true, and then closes the
// returned channel, or until ctx ends. release runs once the polling
// stops, either way.
func pollGone(ctx context.Context, interval time.Duration, wake <-chan os.Signal, gone func() bool, release func()) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer release()
		t := time.NewTicker(interval)
		defer t.Stop()
		for !gone() {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-wake:
			}
		}
		close(ch)
	}()
	return ch
}
