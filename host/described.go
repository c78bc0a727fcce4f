package host

import (
	"context"
	"fmt"
	"time"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/hostwire"
)

// init hands describeOrStart to package describe, the home of the
// catalog's Describe protocol (describe.Start), through
// internal/hostwire.
func init() { hostwire.DescribeStart = describeOrStart }

// describeOrStart launches the plugin cmd names as Start does (the same
// Command settings, pin check, Runner and timeouts), and asks it, with
// handshake.EnvDescribe, only for its description. A plugkit catalog
// plugin then writes a describe line and exits: describeOrStart returns
// its payload (the protobuf encoding of a catalog.v1 DescribeResponse,
// for the caller to decode and check) and a nil Client, once the process
// has exited 0 and is reaped. Any other plugin ignores the variable and
// answers with its handshake line: that process is connected to as Start
// connects, and describeOrStart returns its Client (Describe it over
// gRPC, then Close it) and no payload. A WebAssembly cmd.Path (run by a
// GuestRunner) is asked the same way: a catalog guest writes its
// description and ends without serving, or the guest is connected to.
func describeOrStart(ctx context.Context, cmd Command, opts Options) ([]byte, *Client, error) {
	c, err := startCommand(ctx, cmd, opts, true)
	switch {
	case err != nil:
		return nil, nil, err
	case c.described != nil:
		return c.described, nil, nil
	}
	return nil, c, nil
}

// finishDescribed takes the describe line (text) a plugin launched by
// describeOrStart wrote, and waits for the plugin to exit 0 within its
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
