package host

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/wire"
)

// lifecycle is what a Client's plugin runs as, from the host's side: a
// process the host launched (launched), a plugin it connected to without
// launching it (attached: Reattach and Connect) or a plugin service
// (service: Dial). It answers for what differs between them: how Close
// ends the plugin, whether and when it exits, its pid, and which
// listener the host accepts.
type lifecycle interface {
	// stop ends the plugin for Close and releases the Client.
	stop(c *Client) error
	// kill ends the plugin at once, where the host may.
	kill()
	// exited is closed when the plugin's process has exited; nil when the
	// host cannot tell.
	exited() <-chan struct{}
	// pid is the plugin's process ID; 0 when unknown or not to signal.
	pid() int
	// listenerCheck returns the check of a unix socket's listener (its
	// pid and uid) before the host uses it, or nil for none.
	listenerCheck() func(pid, uid int, address string) error
}

// Close stops the plugin and releases everything. For a launched plugin:
// the Shutdown RPC, a wait (none when Shutdown answers Unimplemented: the
// plugin has no controller and will not exit by itself), SIGTERM, a wait,
// SIGKILL (on Windows, which has no SIGTERM: the Shutdown RPC, a wait, the
// kill); the process is always reaped. A reattached or connected plugin
// is asked to shut down and then only disconnected: this host did not
// start it; one in debug mode (handshake.Reattach.Test) is only
// disconnected and keeps running, unless ReattachOptions.StopDebugPlugins.
// A plugin service (Dial) is only disconnected. Close is safe to call more
// than once. When a launched plugin had exited on its own before Close (a
// crash, or an exit the host did not ask for), Close still cleans up and
// returns an *ExitError (InUse) saying how it ended.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.life.stop(c) })
	return c.closeErr
}

// Kill ends a launched plugin's process at once with SIGKILL
// (TerminateProcess on Windows), for a plugin that hangs. Close must
// still be called to release the connection; it finds the process gone
// and only cleans up. Kill does nothing to a plugin this host did not
// launch.
func (c *Client) Kill() { c.life.kill() }

// Exited is closed when a launched plugin's process has exited. For a
// plugin this host did not launch it is nil, never closed.
func (c *Client) Exited() <-chan struct{} { return c.life.exited() }

// Pid is the plugin's process ID: the launched process's, the reattach
// configuration's, and 0 for Connect and Dial.
func (c *Client) Pid() int { return c.life.pid() }

// shutdown makes the Shutdown RPC within wait and reports whether the
// plugin is on its way out (see shutdownAccepted), and the RPC's error.
// With idle, it tells the plugin that nothing is in flight
// (wire.ShutdownIdleHeader).
func (c *Client) shutdown(wait time.Duration, idle bool) (willExit bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if idle {
		ctx = metadata.AppendToOutgoingContext(ctx, wire.ShutdownIdleHeader, "1")
	}
	_, err = pluginpb.NewGRPCControllerClient(c.conn).Shutdown(ctx, &pluginpb.Empty{})
	return shutdownAccepted(err), err
}

// shutdownAccepted reports whether a plugin whose Shutdown RPC ended with
// err is on its way out, so that waiting for its exit is worth it: it
// answered (a plugkit plugin), or its connection ended (a go-plugin
// plugin exits inside the call; a process that died ends it too), or the
// call used up the wait. Any other answer, above all Unimplemented from a
// plugin without go-plugin's GRPCController, means that it will not stop
// by itself: the host goes on to SIGTERM at once instead of waiting the
// whole StopTimeout.
func shutdownAccepted(err error) bool {
	switch status.Code(err) {
	case codes.OK, codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return true
	}
	return false
}

// release closes the connection and waits for the background goroutines.
func (c *Client) release() {
	c.broker.Close()
	c.cancelBG()
	c.conn.Close()
	c.closeMux()
	c.bg.Wait()
}

// launched is a plugin process Start launched: the host owns it, stops it
// and reaps it.
type launched struct {
	proc     *process
	sock     *sockDir // the plugin's private socket directory
	name     string
	logger   *slog.Logger
	rep      *reporter
	stopWait time.Duration

	// stopping is set by Close and Kill: an exit after it is expected.
	stopping  atomic.Bool
	deathOnce sync.Once
	deathErr  error // the plugin exited on its own, while in use
}

func (l *launched) stop(c *Client) error {
	select {
	case <-l.proc.exited:
		// Already gone (crashed, or killed from outside); what it
		// started goes too.
		l.proc.killGroup()
		var err error
		if !l.stopping.Swap(true) {
			err = l.reportDeath()
		} else {
			l.reportStopped() // by Kill
		}
		c.release()
		l.proc.closePipes()
		l.sock.remove()
		return err
	default:
	}
	l.stopping.Store(true)
	start := time.Now()
	var shutdownErr error
	// A plugin with no call of the host's in flight and no stdio stream
	// has nothing to drain: it may stop at once.
	idle := c.pipesKept && c.inflight != nil && c.inflight.idle()
	stage := l.proc.stop(func() bool {
		willExit, err := c.shutdown(l.stopWait, idle)
		shutdownErr = err
		return willExit
	}, l.stopWait)
	c.release()
	l.sock.remove()
	// go-plugin plugins exit inside the Shutdown call, so its answer is a
	// closed connection (Unavailable, EOF): with the process gone right
	// after, that is a normal stop, not a failure.
	if shutdownErr != nil && !(stage == stoppedAsked && status.Code(shutdownErr) == codes.Unavailable) {
		c.logger.Debug("plugin Shutdown RPC failed", "error", shutdownErr)
	}
	if stage == stoppedSIGKILL {
		c.logger.Warn("plugin did not stop when asked; killed it", "after", time.Since(start).Round(time.Millisecond))
	}
	// A plugin that died of a limit just before Close (or while Close
	// asked it to stop) is reported with that cause, as if it had died
	// before Close: the runner's judgement (Launch.Exited) is in, since the
	// process was reaped. Only the host's own SIGKILL is no cause of the
	// plugin's: a limit that kills with the same signal cannot be told
	// from it then.
	if l.proc.cause != nil && stage != stoppedSIGKILL {
		return l.reportDeath()
	}
	l.reportStopped()
	return nil
}

// reportStopped reports, unless its exit was reported already, that the
// plugin exited because it was asked to (Close, Kill).
func (l *launched) reportStopped() {
	l.deathOnce.Do(func() { l.rep.report(l.proc.exitEvent(false, nil)) })
}

func (l *launched) kill() {
	l.stopping.Store(true)
	l.proc.forceKill()
}

func (l *launched) exited() <-chan struct{} { return l.proc.exited }

func (l *launched) pid() int { return l.proc.cmd.Process.Pid }

// listenerCheck accepts only the plugin or a process it started: a
// handshake may name another process's socket.
func (l *launched) listenerCheck() func(pid, uid int, address string) error {
	return func(pid, _ int, address string) error { return checkOwner(pid, address, l.pid()) }
}

// watchExit reports a plugin that exits while its host still uses it: one
// event (a WARN record with the exit status and the tail of its stderr,
// an ERROR one for a panic), and the error Close returns. It runs once the
// process has exited (process.whenExited).
func (l *launched) watchExit() {
	if !l.stopping.Load() {
		l.reportDeath()
	}
}

// reportDeath records and logs, once, that the plugin exited on its own.
func (l *launched) reportDeath() error {
	l.deathOnce.Do(func() {
		l.proc.waitStderr()
		err := &ExitError{Name: l.name, InUse: true, State: l.proc.state.String(), Stderr: l.proc.stderr.lastLines(), Cause: l.proc.cause, Panic: l.proc.panicked(l.name)}
		l.deathErr = err
		e := l.proc.exitEvent(true, err.Cause)
		if err.Panic != nil {
			e.Type, e.Cause = EventCrashed, err.Panic
		} else {
			e.Stderr = strings.Join(err.Stderr, "\n")
		}
		l.rep.report(e)
	})
	return l.deathErr
}

// attached is a plugin the host connected to without launching it:
// reattached (Reattach) or serving in-process (Connect).
type attached struct {
	// pidNum is the reattach configuration's pid; 0 for Connect.
	pidNum   int
	stopWait time.Duration
	// leave makes Close only disconnect: a plugin in debug mode waits for
	// the next host.
	leave bool
	// sameUser makes the host refuse a unix socket whose listener runs as
	// another user (Reattach: the configuration may come from anywhere).
	sameUser bool
}

func (a *attached) stop(c *Client) error {
	if !a.leave {
		if _, err := c.shutdown(a.stopWait, false); err != nil {
			c.logger.Debug("plugin Shutdown RPC failed", "error", err)
		}
	}
	c.release()
	return nil
}

func (a *attached) kill()                   {}
func (a *attached) exited() <-chan struct{} { return nil }
func (a *attached) pid() int                { return a.pidNum }

func (a *attached) listenerCheck() func(pid, uid int, address string) error {
	if !a.sameUser {
		return nil
	}
	return func(_, uid int, address string) error {
		if uid != os.Geteuid() {
			return foreignSocket(address, uid, true)
		}
		return nil
	}
}

// service is a plugin service (Dial): it outlives its hosts, so Close
// only disconnects.
type service struct{}

func (service) stop(c *Client) error {
	c.release()
	return nil
}

func (service) kill()                                                   {}
func (service) exited() <-chan struct{}                                 { return nil }
func (service) pid() int                                                { return 0 }
func (service) listenerCheck() func(pid, uid int, address string) error { return nil }
