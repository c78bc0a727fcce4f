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
