package plugin

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// pollGone closes its channel once the probe reports the parent gone, and
// releases the probe.
func TestPollGoneReportsGone(t *testing.T) {
	var calls atomic.Int32
	released := make(chan struct{})
	ch := pollGone(context.Background(), time.Millisecond, nil, func() bool { return calls.Add(1) >= 3 }, func() { close(released) })
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the channel was not closed after the probe reported the parent gone")
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("probe called %d times, want 3 (it stops at the first true)", n)
	}
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the probe was not released")
	}
}

// When ctx ends first the channel stays open and the probe is released.
func TestPollGoneStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	released := make(chan struct{})
	ch := pollGone(ctx, time.Millisecond, nil, func() bool { return false }, func() { close(released) })
	cancel()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the probe was not released after ctx ended")
	}
	select {
	case <-ch:
		t.Fatal("the channel was closed although the parent lives")
	default:
	}
}

// This process's parent (go test) lives, so the real probe says so.
func TestParentProbeLiveParent(t *testing.T) {
	if testutil.UnderWine() {
		t.Skip("under Wine this test binary's parent is wine's Linux launcher, not a Windows process")
	}
	gone, release := parentProbe(func(string) (string, bool) { return "", false })
	defer release()
	if gone() {
		t.Fatal("parentProbe reports the live parent gone")
	}
}
