package host

import (
	"context"
	"fmt"
	"time"

	"github.com/plugkit/plugkit/handshake"
)

// finishDescribed takes the describe line (text) a plugin launched by
// DescribeOrStart wrote, and waits for the plugin to exit 0 within its
// stop timeout; a plugin that stays is killed and refused. What it left
// (its process group, its socket directory) is removed either way.
func (c *Client) finishDescribed(ctx context.Context, l *launched, text string) error {
	payload, err := handshake.ParseDescribe(text)
	if err != nil {
		return l.fail(c.name, err)
	}
	c.rep.report(Event{Type: EventStarted, Pid: l.pid()})
	t := time.NewTimer(l.stopWait)
	defer t.Stop()
	select {
	case <-l.proc.exited:
	case <-t.C:
		return l.fail(c.name, fmt.Errorf("wrote its description but did not exit within %v; killed it: fix the plugin", l.stopWait))
	case <-ctx.Done():
		return l.fail(c.name, fmt.Errorf("waiting for the plugin to exit after its description: %w", ctx.Err()))
	}
	if !l.proc.state.Success() {
		return l.fail(c.name, l.proc.exitError(c.name))
	}
	l.stopping.Store(true)
	l.proc.killGroup()
	l.proc.closePipes()
	l.sock.remove()
	l.reportStopped()
	c.described = payload
	return nil
}

// finishDescribedGuest is finishDescribed for a guest (GuestRunner): it
// waits for the guest to end with status 0 within its stop timeout, and
// stops one that stays. The caller stops a guest on the error returned.
func (c *Client) finishDescribedGuest(ctx context.Context, l *guestLife, text string) error {
	payload, err := handshake.ParseDescribe(text)
	if err != nil {
		return err
	}
	c.rep.report(Event{Type: EventStarted})
	t := time.NewTimer(l.stopWait)
	defer t.Stop()
	select {
	case <-l.guest.Done():
	case <-t.C:
		return fmt.Errorf("wrote its description but did not exit within %v; stopped it: fix the plugin", l.stopWait)
	case <-ctx.Done():
		return fmt.Errorf("waiting for the plugin to exit after its description: %w", ctx.Err())
	}
	if err := l.guest.Err(); err != nil {
		return l.exitError()
	}
	l.stopping.Store(true)
	l.pipes.closeHostEnds()
	l.pipes.waitStderr()
	c.rep.report(Event{Type: EventExited, Duration: time.Since(c.started)})
	c.described = payload
	return nil
}
