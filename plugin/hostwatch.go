//go:build !wasip1

package plugin

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/plugkit/plugkit/handshake"
)

// atStart watches the host from this program's start (a package
// variable's initialiser runs before main), when a host launched it: a
// host that dies at any step of the handshake, or before the plugin even
// calls Serve, is seen gone within parentPollInterval (on Linux, at
// once, through PR_SET_PDEATHSIG). It is nil in a program no host
// launched (debug mode, a service, a program that merely imports this
// package).
var atStart = watchHostFromStart(os.LookupEnv)

// startWatch is the watch begun at the start.
type startWatch struct {
	gone <-chan struct{} // closed once the host is gone
	stop context.CancelFunc
	exit func() // ends the process: os.Exit(1)

	// mu makes the watch's look at serving and its exit one step
	// against a claim: a Run that comes while the process exits waits
	// inside claim for the exit, and so makes no socket directory
	// that the exit would leave behind.
	mu      sync.Mutex
	serving int // Runs that stop in order when the host is gone
}

// launchedByHost reports whether a go-plugin host launched this program:
// it set the protocol versions, and asked for neither debug mode nor a
// service.
func launchedByHost(lookup func(string) (string, bool)) bool {
	if v, _ := lookup(handshake.EnvProtocolVersions); v == "" {
		return false
	}
	if v, _ := lookup(EnvListen); v != "" {
		return false
	}
	debug, err := strconv.ParseBool(envOr(lookup, EnvDebug, "0"))
	return err == nil && !debug
}

func envOr(lookup func(string) (string, bool), key, def string) string {
	if v, ok := lookup(key); ok && v != "" {
		return v
	}
	return def
}

// watchHostFromStart starts the watch of the host that launched this
// program, or returns nil when none did or the system cannot tell.
func watchHostFromStart(lookup func(string) (string, bool)) *startWatch {
	if !launchedByHost(lookup) {
		return nil
	}
	gone, release := parentProbe(lookup)
	if gone == nil {
		return nil
	}
	wake, disarm, kernelWatches := deathSignal() // the kernel's word, at once
	interval := parentPollInterval
	if kernelWatches {
		interval = watchedPollInterval
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &startWatch{stop: cancel, exit: func() { os.Exit(1) }}
	w.gone = pollGone(ctx, interval, wake, gone, func() { disarm(); release() })
	go w.exitUnlessServing(ctx)
	return w
}

// exitUnlessServing ends the program once the host is gone, unless Run
// serves and stops in order itself.
func (w *startWatch) exitUnlessServing(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-w.gone:
	}
	w.mu.Lock()
	defer w.mu.Unlock() // only a test's exit returns
	if w.serving > 0 {
		return
	}
	// The word to the host's stderr, if anyone still reads it, gets a
	// second: a pipe that is full and no longer read would otherwise
	// hold the exit, and with it a Run waiting in claim, for good.
	said := make(chan struct{})
	go func() {
		fmt.Fprintln(processStderr, "plugin: the host process that launched this plugin is gone; exiting")
		close(said)
	}()
	select {
	case <-said:
	case <-time.After(time.Second):
	}
	w.exit() // os.Exit: the lock stays held until the process has ended
}

// claim makes Run the one to stop when the host is gone; the returned
// function gives that back. With noWatch (debug mode) the watch ends.
func (w *startWatch) claim(noWatch bool) (gone <-chan struct{}, unclaim func()) {
	if w == nil {
		return nil, func() {}
	}
	if noWatch {
		w.stop()
		return nil, func() {}
	}
	w.mu.Lock()
	w.serving++
	w.mu.Unlock()
	return w.gone, func() {
		w.mu.Lock()
		w.serving--
		w.mu.Unlock()
	}
}
