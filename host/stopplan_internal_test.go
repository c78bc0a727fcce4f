package host

import (
	"slices"
	"testing"
	"time"
)

// The stages of a stop on a graceful system (unix) and on Windows, and
// of the kill after a failed start, checked on every system.
func TestStopPlan(t *testing.T) {
	noop := func() {}
	ask := func() bool { return true }
	stages := func(plan []stopStep) []int {
		var out []int
		for _, s := range plan {
			out = append(out, s.stage)
		}
		return out
	}
	waits := func(plan []stopStep) []time.Duration {
		var out []time.Duration
		for _, s := range plan {
			out = append(out, s.wait)
		}
		return out
	}
	cases := []struct {
		name     string
		plan     []stopStep
		stages   []int
		waits    []time.Duration
		graceful bool
	}{
		{"unix Close", stopPlan(ask, noop, noop, time.Second, true),
			[]int{stoppedAsked, stoppedSIGTERM, stoppedSIGKILL}, []time.Duration{time.Second, time.Second, -1}, true},
		{"windows Close", stopPlan(ask, noop, noop, time.Second, false),
			[]int{stoppedAsked, stoppedSIGKILL}, []time.Duration{time.Second, -1}, false},
		{"unix failed start", stopPlan(nil, noop, noop, failGrace, true),
			[]int{stoppedSIGTERM, stoppedSIGKILL}, []time.Duration{failGrace, -1}, true},
		{"windows failed start", stopPlan(nil, noop, noop, failGrace, false),
			[]int{stoppedSIGKILL}, []time.Duration{-1}, false},
	}
	for _, c := range cases {
		if got := stages(c.plan); !slices.Equal(got, c.stages) {
			t.Errorf("%s: stages %v, want %v", c.name, got, c.stages)
		}
		if got := waits(c.plan); !slices.Equal(got, c.waits) {
			t.Errorf("%s: waits %v, want %v", c.name, got, c.waits)
		}
	}
}

// escalate runs the steps in order, stops at the first exit, and counts
// the time a step's action took against its wait.
func TestEscalate(t *testing.T) {
	for _, c := range []struct {
		name     string
		exitAt   int // index of the wait that sees the exit
		graceful bool
		want     int
		did      []string
	}{
		{"unix: exits when asked", 0, true, stoppedAsked, []string{"ask"}},
		{"unix: exits on SIGTERM", 1, true, stoppedSIGTERM, []string{"ask", "term"}},
		{"unix: killed", 2, true, stoppedSIGKILL, []string{"ask", "term", "kill"}},
		{"windows: exits when asked", 0, false, stoppedAsked, []string{"ask"}},
		{"windows: killed after the Shutdown RPC", 1, false, stoppedSIGKILL, []string{"ask", "kill"}},
	} {
		var did []string
		var waited []time.Duration
		step := func(name string, d time.Duration) func() {
			return func() {
				did = append(did, name)
				time.Sleep(d)
			}
		}
		ask := func() bool { step("ask", 30*time.Millisecond)(); return true }
		plan := stopPlan(ask, step("term", 0), step("kill", 0), time.Hour, c.graceful)
		got := escalate(plan, func(d time.Duration) bool {
			waited = append(waited, d)
			return len(waited)-1 == c.exitAt
		})
		if got != c.want {
			t.Errorf("%s: stage %d, want %d", c.name, got, c.want)
		}
		if !slices.Equal(did, c.did) {
			t.Errorf("%s: did %v, want %v", c.name, did, c.did)
		}
		// The Shutdown call took 30 ms of the first wait.
		if first := waited[0]; first > time.Hour-30*time.Millisecond || first < time.Hour-10*time.Second {
			t.Errorf("%s: first wait %v, want an hour less the 30 ms the ask took", c.name, first)
		}
		if last := waited[len(waited)-1]; c.want == stoppedSIGKILL && last >= 0 {
			t.Errorf("%s: the wait after the kill is bounded (%v); it must wait for the exit", c.name, last)
		}
	}
}

// A plugin that refuses the Shutdown RPC (no controller: Unimplemented) is
// not waited for: SIGTERM follows at once, and its wait is whole.
func TestEscalateAfterRefusedShutdown(t *testing.T) {
	var waited []time.Duration
	refuse := func() bool { return false }
	noop := func() {}
	got := escalate(stopPlan(refuse, noop, noop, time.Hour, true), func(d time.Duration) bool {
		waited = append(waited, d)
		return len(waited) == 2
	})
	if got != stoppedSIGTERM {
		t.Errorf("stage %d, want %d (SIGTERM)", got, stoppedSIGTERM)
	}
	if len(waited) != 2 || waited[0] != 0 || waited[1] < time.Hour-10*time.Second {
		t.Errorf("waits %v, want none after the refused Shutdown and about an hour after SIGTERM", waited)
	}
}
