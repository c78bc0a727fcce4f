//go:build !wasip1

package plugin

import (
	"context"
	"testing"
	"time"
)

// TestClaimWaitsForAnExitUnderWay is the race behind a socket directory
// that a plugin left in the temporary directory when its host died as Run
// began: the watch saw no Run serving and went on to exit, Run claimed the
// stop a moment later and made its directory, and the exit then ended the
// process with the directory in place. A claim must wait for an exit
// already decided (the process ends inside it), so that Run makes nothing
// it cannot remove.
func TestClaimWaitsForAnExitUnderWay(t *testing.T) {
	gone := make(chan struct{})
	exiting, release := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &startWatch{gone: gone, stop: cancel, exit: func() {
		close(exiting)
		<-release // os.Exit never returns; this stands for the time it takes
	}}
	go w.exitUnlessServing(ctx)
	close(gone)
	<-exiting

	claimed := make(chan struct{})
	go func() {
		w.claim(false)
		close(claimed)
	}()
	select {
	case <-claimed:
		t.Fatal("Run claimed the stop while the watch was exiting the process: it would go on to make its socket directory, which the exit leaves behind")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	<-claimed
}

// TestWatchLeavesAClaimedStopToRun is the other order: a Run that claimed
// the stop first keeps the process, and stops in order itself.
func TestWatchLeavesAClaimedStopToRun(t *testing.T) {
	gone := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan struct{})
	w := &startWatch{gone: gone, stop: cancel, exit: func() { close(exited) }}
	_, unclaim := w.claim(false)
	defer unclaim()
	done := make(chan struct{})
	go func() {
		w.exitUnlessServing(ctx)
		close(done)
	}()
	close(gone)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch neither exited nor returned 10 s after the host was gone")
	}
	select {
	case <-exited:
		t.Fatal("the watch exited the process although Run had claimed the stop")
	default:
	}
}
