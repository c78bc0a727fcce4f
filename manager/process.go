package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"go.opentelemetry.io/otel/attribute"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/wire"
)

// process is the one shared plugin process of a binary: started on first
// use, restarted after a crash, never after close, and moved to a new
// release by an upgrade. Its Conns hold it; each call holds the instance
// (one running process of one release) it started on.
type process struct {
	m *Manager

	lock chan struct{} // held while starting or switching; waiters honour their context

	// The fields below are guarded by lock.
	bin      found  // the release new processes start from
	path     string // bin's Location.String(), for messages
	cur      *instance
	gen      int // increments with every start
	closed   bool
	restarts int // restarts in a row without a stable run
	started  time.Time
	lastErr  error
	gaveUp   bool        // the gave-up event was reported
	trial    *trial      // the upgrade on probation, if any
	retired  []*instance // older (or rolled back) instances still running
	stale    *stale      // the last start refused because bin's file changed

	// upgrading is held by the one upgrade of the process at a time.
	upgrading chan struct{}

	connsMu sync.Mutex
	conns   map[*Conn]struct{} // the Conns dispensed on it and not closed
}

func newProcess(m *Manager, bin found) *process {
	return &process{m: m, bin: bin, path: bin.Location.String(), lock: make(chan struct{}, 1), upgrading: make(chan struct{}, 1), conns: map[*Conn]struct{}{}}
}

func (p *process) acquire(ctx context.Context) error {
	select {
	case p.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for plugin %s to start: %w", p.path, ctx.Err())
	}
}

func (p *process) release() { <-p.lock }

// get returns a live instance with the call ref held on it, starting or
// restarting the process when needed.
func (p *process) get(ctx context.Context, ref *callRef) (*instance, error) {
	if err := p.acquire(ctx); err != nil {
		return nil, err
	}
	defer p.release()
	if p.closed {
		return nil, ErrClosed
	}
	if p.cur != nil {
		select {
		case <-p.cur.client.Exited():
			// Close says how it ended: its exit status, and the cause its
			// Runner saw (a sandbox's memory limit, say).
			exitErr := p.cur.client.Close()
			if p.trial != nil {
				// A new release that died on probation is rolled back,
				// never restarted.
				p.rollbackLocked(crashed(p.cur, exitErr))
				if p.cur != nil {
					p.cur.hold(ref)
					return p.cur, nil
				}
				break
			}
			p.m.cfg.logger().Warn("plugin process exited; restarting it", "plugin", p.path, "pid", p.cur.client.Pid(), "error", exitErr)
			if exitErr != nil {
				p.lastErr = exitErr
			}
			p.cur = nil
			if time.Since(p.started) > stableAfter {
				p.restarts = 0
			}
			p.restarts++
		default:
			p.cur.hold(ref)
			return p.cur, nil
		}
	}
	if p.stale != nil && time.Since(p.stale.at) < staleRecheck {
		return nil, p.stale.err
	}
	maxRestarts := cmp.Or(p.m.cfg.Restart.Max, DefaultMaxRestarts)
	if p.restarts > maxRestarts {
		if !p.gaveUp {
			p.gaveUp = true
			p.m.report(p.event(EventGaveUp, 0, p.lastErr))
		}
		return nil, fmt.Errorf("plugin %s crashed %d times in a row; gave up restarting it (last error: %v); fix the plugin and create a new Manager", p.path, p.restarts, p.lastErr)
	}
	in, err := p.startClient(ctx)
	if err != nil {
		return nil, err
	}
	in.hold(ref)
	return in, nil
}

// crashed is the cause of a rollback for a new release that exited.
func crashed(in *instance, exitErr error) error {
	if exitErr == nil {
		exitErr = errors.New("it exited")
	}
	return fmt.Errorf("the new process (pid %d) died on probation: %w", in.client.Pid(), exitErr)
}

// event is a lifecycle event of the process's plugin.
func (p *process) event(typ host.EventType, pid int, cause error) host.Event {
	e := host.Event{Type: typ, Plugin: filepath.Base(p.path), Binary: p.path, Pid: pid, Restarts: p.restarts, Cause: cause}
	if v := p.bin.Description.GetPluginVersion(); v != "" {
		e.Attributes = []attribute.KeyValue{versionAttribute(v)}
	}
	return e
}

// startClient starts the process, or restarts it after a backoff when
// it ran before. The lock is held.
func (p *process) startClient(ctx context.Context) (in *instance, err error) {
	if p.restarts > 0 {
		backoff := cmp.Or(p.m.cfg.Restart.Backoff, DefaultRestartBackoff) << (p.restarts - 1)
		backoff = min(backoff, DefaultMaxBackoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("waiting %v to restart plugin %s: %w", backoff, p.path, ctx.Err())
		}
		var end func(error)
		ctx, end = p.m.span(ctx, "plugkit.restart", attribute.String("plugkit.binary", p.path), attribute.Int("plugkit.restarts", p.restarts))
		defer func() { end(err) }()
	}
	// host.Start checks the file, on the open file it then executes: its
	// pin, or else the SHA-256 its release was described with
	// (Finder.Start); a file changed since is refused, not restarted.
	c, err := p.bin.src.Connect(ctx, p.bin.Entry)
	if ce, ok := changedSince(err, p.bin.SHA256); ok {
		return nil, p.refuseStale(ce)
	}
	if err != nil {
		p.lastErr = err
		p.restarts++
		return nil, err
	}
	p.stale = nil
	if p.restarts > 0 {
		p.m.report(p.event(EventRestarted, c.Pid(), nil))
	}
	p.gen++
	p.cur, p.started = newInstance(p.bin, c, p.gen), time.Now()
	return p.cur, nil
}

// staleRecheck is how long calls to a plugin whose start was refused
// because its file changed fail at once with that refusal, before the
// next call looks at the file again (hashing it): the described file may
// be put back.
const staleRecheck = time.Second

// stale is a start refused because the plugin's file no longer has the
// SHA-256 its release was described with.
type stale struct {
	err error
	got string // the file's SHA-256 then
	at  time.Time
}

// changedFileError is a start refused because the plugin's file changed
// since its release was described: its own words (the host's would speak
// of a pin), and the *host.ChecksumError for errors.As.
type changedFileError struct {
	*host.ChecksumError
	msg string
}

func (e *changedFileError) Error() string { return e.msg }
func (e *changedFileError) Unwrap() error { return e.ChecksumError }

// refuseStale refuses to start the process from a file that changed
// since its release was described (ce), reporting EventRestartRefused
// once per change of the file, and returns the error calls get. A
// refusal is no crash: it does not count as a restart. The lock is held.
func (p *process) refuseStale(ce *host.ChecksumError) error {
	what, started := "restarted", "exited"
	if p.gen == 0 {
		what, started = "started", "had not started yet"
	}
	err := &changedFileError{ChecksumError: ce, msg: fmt.Sprintf("plugin %s %s, and its file changed since its release was described (its SHA-256 is now %s, it was described with %s), so it was not %s: a restart runs only the release the plugin serves as. Take the new file through Manager.Refresh or Manager.Upgrade (Manager.Watch does it by itself), which check it before any call moves to it, or put the described file back",
		foundName(p.bin), started, ce.Got, ce.Want, what)}
	if p.stale == nil || p.stale.got != ce.Got {
		p.m.report(p.event(EventRestartRefused, 0, err))
	}
	p.stale = &stale{err: err, got: ce.Got, at: time.Now()}
	return err
}

// observe looks at a failed call: a crash is logged and wrapped; a call
// that timed out makes the process prove it is alive within
// Config.Restart.HungCheck, or be killed so that the next call restarts
// it. A call the caller cancelled, and one the plugin answered (ans: its
// status, whatever the code, is its answer), return at once. Only a call
// whose connection broke waits, for the process's exit (c.Exited), to
// tell a crash from a connection the plugin lives on after: at most
// exitWait, and never for a plugin without a process here (attached,
// remote).
func (p *process) observe(ctx context.Context, in *instance, method string, err error, ans *answer) error {
	c := in.client
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		// The caller cancelled or ran out of time: its error is the
		// answer, at once. A hung plugin is still looked into.
		if status.Code(err) == codes.DeadlineExceeded {
			go p.checkHung(in)
		}
		return err
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled, codes.Internal:
		if ans.answered() || c.Exited() == nil {
			return err
		}
		if exitSeen(ctx, c.Exited(), p.m.hooks.exitWait) {
			// Close, on a process that has exited, only cleans up and
			// says how it ended (the restart closes it again: a no-op).
			if exitErr := c.Close(); exitErr != nil {
				return fmt.Errorf("plugin %s (pid %d) died during %s; the call failed and was not retried; the next call restarts the plugin: %w (%w)", in.path, c.Pid(), method, err, exitErr)
			}
			return fmt.Errorf("plugin %s (pid %d) died during %s; the call failed and was not retried; the next call restarts the plugin: %w", in.path, c.Pid(), method, err)
		}
	case codes.DeadlineExceeded:
		go p.checkHung(in)
	}
	return err
}

// exitSeen waits for exited to close, for at most exitWait and while
// ctx lives, and reports whether it did. hook, when a test sets it, is
// told of every wait.
func exitSeen(ctx context.Context, exited <-chan struct{}, hook func()) bool {
	if hook != nil {
		hook()
	}
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-exited:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (p *process) checkHung(in *instance) {
	c := in.client
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(p.m.cfg.Restart.HungCheck, DefaultHungCheck))
	defer cancel()
	_, err := healthpb.NewHealthClient(c.Conn()).Check(ctx, &healthpb.HealthCheckRequest{Service: wire.HealthService})
	if err == nil {
		return
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
		// The event's ERROR record says it; the next call restarts it.
		p.m.report(in.event(EventHung, c.Pid(), err))
		c.Kill()
	}
}

// close stops the process for good, with every instance of it still
// running.
func (p *process) close() {
	p.lock <- struct{}{}
	defer p.release()
	p.closed, p.trial = true, nil
	all := p.retired
	if p.cur != nil {
		all = append(all, p.cur)
	}
	p.cur, p.retired = nil, nil
	for _, in := range all {
		in.client.Close()
	}
}
