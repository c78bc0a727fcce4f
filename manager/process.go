package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"go.opentelemetry.io/otel/attribute"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/wire"
)

// process is the one shared plugin process of a binary: started on first
// use, restarted after a crash, never after close.
type process struct {
	m    *Manager
	bin  found  // the plugin, which its source connects to
	path string // bin.Path, for messages

	lock chan struct{} // held while starting; waiters honour their context

	// The fields below are guarded by lock.
	client   *host.Client
	gen      int // increments with every start
	closed   bool
	restarts int // restarts in a row without a stable run
	started  time.Time
	lastErr  error
	gaveUp   bool // the gave-up event was reported
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

// get returns a live client and its generation, starting or restarting
// the process when needed.
func (p *process) get(ctx context.Context) (*host.Client, int, error) {
	if err := p.acquire(ctx); err != nil {
		return nil, 0, err
	}
	defer p.release()
	if p.closed {
		return nil, 0, ErrClosed
	}
	if p.client != nil {
		select {
		case <-p.client.Exited():
			// Close says how it ended: its exit status, and the cause its
			// Runner saw (a sandbox's memory limit, say).
			exitErr := p.client.Close()
			p.m.cfg.logger().Warn("plugin process exited; restarting it", "plugin", p.path, "pid", p.client.Pid(), "error", exitErr)
			if exitErr != nil {
				p.lastErr = exitErr
			}
			p.client = nil
			if time.Since(p.started) > stableAfter {
				p.restarts = 0
			}
			p.restarts++
		default:
			return p.client, p.gen, nil
		}
	}
	maxRestarts := cmp.Or(p.m.cfg.Restart.Max, DefaultMaxRestarts)
	if p.restarts > maxRestarts {
		if !p.gaveUp {
			p.gaveUp = true
			p.m.report(p.event(EventGaveUp, 0, p.lastErr))
		}
		return nil, 0, fmt.Errorf("plugin %s crashed %d times in a row; gave up restarting it (last error: %v); fix the plugin and create a new Manager", p.path, p.restarts, p.lastErr)
	}
	return p.startClient(ctx)
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
func (p *process) startClient(ctx context.Context) (c *host.Client, gen int, err error) {
	if p.restarts > 0 {
		backoff := cmp.Or(p.m.cfg.Restart.Backoff, DefaultRestartBackoff) << (p.restarts - 1)
		backoff = min(backoff, DefaultMaxBackoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, 0, fmt.Errorf("waiting %v to restart plugin %s: %w", backoff, p.path, ctx.Err())
		}
		var end func(error)
		ctx, end = p.m.span(ctx, "plugkit.restart", attribute.String("plugkit.binary", p.path), attribute.Int("plugkit.restarts", p.restarts))
		defer func() { end(err) }()
	}
	// A pinned binary is checked by host.Start itself, on the open file
	// it then executes (Command.SHA256 from Finder.hostConfig).
	c, err = p.bin.src.Connect(ctx, p.bin.Entry)
	if err != nil {
		p.lastErr = err
		p.restarts++
		return nil, 0, err
	}
	if p.restarts > 0 {
		p.m.report(p.event(EventRestarted, c.Pid(), nil))
	}
	p.client, p.started = c, time.Now()
	p.gen++
	return c, p.gen, nil
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
func (p *process) observe(ctx context.Context, c *host.Client, method string, err error, ans *answer) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		// The caller cancelled or ran out of time: its error is the
		// answer, at once. A hung plugin is still looked into.
		if status.Code(err) == codes.DeadlineExceeded {
			go p.checkHung(c)
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
				return fmt.Errorf("plugin %s (pid %d) died during %s; the call failed and was not retried; the next call restarts the plugin: %w (%w)", p.path, c.Pid(), method, err, exitErr)
			}
			return fmt.Errorf("plugin %s (pid %d) died during %s; the call failed and was not retried; the next call restarts the plugin: %w", p.path, c.Pid(), method, err)
		}
	case codes.DeadlineExceeded:
		go p.checkHung(c)
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

func (p *process) checkHung(c *host.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(p.m.cfg.Restart.HungCheck, DefaultHungCheck))
	defer cancel()
	_, err := healthpb.NewHealthClient(c.Conn()).Check(ctx, &healthpb.HealthCheckRequest{Service: wire.HealthService})
	if err == nil {
		return
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
		// The event's ERROR record says it; the next call restarts it.
		p.m.report(p.event(EventHung, c.Pid(), err))
		c.Kill()
	}
}

// close stops the process for good.
func (p *process) close() {
	p.lock <- struct{}{}
	defer p.release()
	p.closed = true
	if p.client != nil {
		p.client.Close()
		p.client = nil
	}
}
