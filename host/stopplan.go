package host

import "time"

// A stopStep is one stage of ending a plugin process: do something, then
// wait up to wait for the exit (a negative wait: as long as it takes).
// When do reports that the process will not exit because of it (false),
// the next stage follows at once.
type stopStep struct {
	stage int
	do    func() (willExit bool)
	wait  time.Duration
}

// stopPlan lists the stages of stopping a process. ask (the Shutdown RPC;
// nil for none) shares the first wait with the exit after it, unless it
// reports that the plugin will not stop (no controller: Unimplemented), in
// which case the next stage follows at once; graceful
// systems then send SIGTERM (terminate) and wait again; the last stage
// kills and waits for the exit however long it takes. Windows is not
// graceful: it has no SIGTERM, so the kill comes right after ask.
func stopPlan(ask func() (willExit bool), terminate, kill func(), wait time.Duration, graceful bool) []stopStep {
	var plan []stopStep
	if ask != nil {
		plan = append(plan, stopStep{stoppedAsked, ask, wait})
	}
	if graceful {
		plan = append(plan, stopStep{stoppedSIGTERM, always(terminate), wait})
	}
	return append(plan, stopStep{stoppedSIGKILL, always(kill), -1})
}

// always adapts a signal to a stopStep's do: the exit is expected after it.
func always(f func()) func() bool {
	return func() bool { f(); return true }
}

// escalate runs plan's steps in order until exitedWithin reports the exit
// within a step's wait, the time its do took counted in, and returns that
// step's stage; a step whose do reports that no exit will follow only
// checks, without waiting. exitedWithin(d) waits up to d (negative:
// without limit).
func escalate(plan []stopStep, exitedWithin func(time.Duration) bool) int {
	for _, s := range plan {
		begin := time.Now()
		willExit := s.do()
		wait := s.wait
		if wait >= 0 {
			wait = max(wait-time.Since(begin), 0)
		}
		if !willExit {
			wait = 0
		}
		if exitedWithin(wait) {
			return s.stage
		}
	}
	// Unreachable with a plan from stopPlan, whose last wait is unbounded.
	return plan[len(plan)-1].stage
}
