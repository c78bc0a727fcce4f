package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// guestLife is a guest a GuestRunner runs for Start: the host owns it and
// ends it by closing its pipes and stopping it.
type guestLife struct {
	pipes    *guestPipes
	guest    Guest
	name     string
	stopWait time.Duration

	stopping  atomic.Bool // Close or Kill: an end after it is expected
	deathOnce sync.Once
	deathErr  error // the guest ended on its own, while in use
}

// readHandshake waits for the guest's handshake line.
func (l *guestLife) readHandshake(ctx context.Context, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-l.pipes.lineCh:
		if r.complete {
			return r.line, nil
		}
		if r.err != nil && !errors.Is(r.err, io.EOF) {
			return "", fmt.Errorf("reading the handshake: %w", r.err)
		}
		select {
		case <-l.guest.Done():
		case <-time.After(drainTimeout):
			return "", fmt.Errorf("the guest closed its stdout without a handshake line (got %q)", r.line)
		}
		return "", l.exitError()
	case <-l.guest.Done():
		if r, ok := lineAfterEnd(ctx, l.pipes.lineCh); ok && r.complete {
			return r.line, nil
		}
		return "", l.exitError()
	case <-t.C:
		return "", errHandshakeTimeout(timeout)
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for the handshake: %w", ctx.Err())
	}
}

// fail stops a guest whose start failed with err, and returns the error
// Start gives for it, with what the guest wrote on its standard error.
func (l *guestLife) fail(name string, err error) error {
	g := l.pipes
	l.guest.Stop(err)
	g.closeHostEnds()
	<-l.guest.Done()
	g.waitStderr()
	var exit *ExitError
	if errors.As(err, &exit) {
		exit.Stderr = g.stderr.lastLines()
		return exit
	}
	return &StartError{Name: name, Err: err, Stderr: g.stderr.lastLines()}
}

// exitError is the ExitError of a guest that ended before its handshake.
func (l *guestLife) exitError() error {
	l.pipes.waitStderr()
	err := l.guest.Err()
	return &ExitError{Name: l.name, State: guestExitState(err), Cause: guestCause(err), Panic: l.pipes.stderr.panicError(l.name)}
}

// guestCause is what the runtime says ended the guest, beyond an exit
// status: an error that is not a plain exit code (out of memory, a
// budget, a trap).
func guestCause(err error) error {
	var exit interface{ ExitCode() uint32 }
	if err == nil || errors.As(err, &exit) {
		return nil
	}
	return err
}

func (l *guestLife) stop(c *Client) error {
	select {
	case <-l.guest.Done():
		var err error
		if !l.stopping.Swap(true) {
			err = l.reportDeath(c)
		}
		c.release()
		l.pipes.closeHostEnds()
		return err
	default:
	}
	l.stopping.Store(true)
	if _, err := c.shutdown(l.stopWait, false); err != nil {
		c.logger.Debug("plugin Shutdown RPC failed", "error", err)
	}
	c.release()
	// A guest waiting for input ends when its input does; one that does
	// not (it spins) is stopped.
	l.pipes.closeHostEnds()
	select {
	case <-l.guest.Done():
	case <-time.After(l.stopWait):
		c.logger.Warn("plugin did not stop when asked; stopped it")
		l.guest.Stop(errGuestStopTimeout)
		<-l.guest.Done()
	}
	// A guest that ended of a cause of its own (its memory limit, its
	// CPU budget, a trap) just before Close, or while Close asked it to
	// stop, is reported with it, as if it had ended before Close.
	if err := l.guest.Err(); guestCause(err) != nil && !errors.Is(err, errGuestStopTimeout) {
		return l.reportDeath(c)
	}
	l.pipes.waitStderr()
	c.rep.report(Event{Type: EventExited, Duration: time.Since(c.started)})
	return nil
}

// errGuestStopTimeout is the cause Close stops a guest with when it does
// not end within its stop timeout: Close's own, not the guest's.
var errGuestStopTimeout = errors.New("host: the guest did not stop within its stop timeout")

func (l *guestLife) kill() {
	l.stopping.Store(true)
	l.guest.Stop(errors.New("host: Client.Kill"))
	l.pipes.closeHostEnds()
}

func (l *guestLife) exited() <-chan struct{}                                 { return l.guest.Done() }
func (l *guestLife) pid() int                                                { return 0 }
func (l *guestLife) listenerCheck() func(pid, uid int, address string) error { return nil }

// watch reports a guest that ends while in use, and stops one that keeps
// its thread busy past its CPU budget.
func (l *guestLife) watch(c *Client) {
	budget := l.guest.CPUBudget()
	if budget <= 0 {
		<-l.guest.Done()
	} else {
		l.watchBudget(c, budget)
	}
	if !l.stopping.Load() {
		l.reportDeath(c)
	}
}

// watchBudget checks the guest's health every budget; a check that does
// not answer within the budget means its one thread is busy (a call that
// spins), and the guest is stopped.
func (l *guestLife) watchBudget(c *Client, budget time.Duration) {
	t := time.NewTicker(budget)
	defer t.Stop()
	for {
		select {
		case <-l.guest.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		err := c.checkHealth(ctx)
		cancel()
		// A budget passed while Close runs is still the guest's cause:
		// Close reports it.
		if err != nil && ctx.Err() != nil {
			l.guest.Stop(&BudgetError{Name: l.name, Budget: budget})
			l.pipes.closeHostEnds()
			<-l.guest.Done()
			return
		}
	}
}

// reportDeath records and logs, once, that the guest ended on its own.
func (l *guestLife) reportDeath(c *Client) error {
	l.deathOnce.Do(func() {
		l.pipes.waitStderr()
		gerr := l.guest.Err()
		err := &ExitError{Name: l.name, InUse: true, State: guestExitState(gerr), Stderr: l.pipes.stderr.lastLines(), Cause: guestCause(gerr), Panic: l.pipes.stderr.panicError(l.name)}
		l.deathErr = err
		e := Event{Type: EventExited, Unexpected: true, Cause: err.Cause, Duration: time.Since(c.started)}
		if err.Panic != nil {
			e.Type, e.Cause = EventCrashed, err.Panic
		}
		c.rep.report(e)
	})
	return l.deathErr
}

// BudgetError reports a guest (GuestRunner) the host stopped because it
// kept its one thread busy past its CPU budget (Guest.CPUBudget): a call
// that spins, or works longer than the budget allows. Raise the budget
// for plugins that legitimately compute that long.
type BudgetError struct {
	Name   string
	Budget time.Duration
}

// Error says what happened and what to do.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("plugin %s kept its thread busy for over %v (its CPU budget) without answering a health check: the host stopped it; raise the budget if its calls legitimately run that long", e.Name, e.Budget)
}
