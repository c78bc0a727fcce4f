package host

import (
	"cmp"
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// Close stops the plugin and releases everything: the Shutdown RPC, a
// wait (none when Shutdown answers Unimplemented: the plugin has no
// controller and will not exit by itself), SIGTERM, a wait, SIGKILL (on Windows, which has no SIGTERM: the
// Shutdown RPC, a wait, the kill); the process is always reaped. A
// reattached plugin is asked to shut down and then only disconnected:
// this host did not start it; one in debug mode (ReattachConfig.Test) is
// only disconnected and keeps running, unless Config.StopDebugPlugins.
// Close is safe to call more than once. When the plugin had exited on its
// own before Close (a crash, or an exit the host did not ask for), Close
// still cleans up and returns an *UnexpectedExitError saying how it ended.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Client) close() error {
	wait := cmp.Or(c.cfg.StopTimeout, DefaultStopTimeout)
	var shutdownErr error
	shutdown := func() (willExit bool) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_, shutdownErr = pluginpb.NewGRPCControllerClient(c.conn).Shutdown(ctx, &pluginpb.Empty{})
		return shutdownAccepted(shutdownErr)
	}
	if c.remote != nil || (c.proc == nil && c.debug && !c.cfg.StopDebugPlugins) {
		// A plugin service outlives its hosts, and a plugin in debug mode
		// waits for the next one: only disconnect.
		c.release()
		return nil
	}
	if c.proc == nil {
		shutdown()
		if shutdownErr != nil {
			c.logger.Debug("plugin Shutdown RPC failed", "error", shutdownErr)
		}
		c.release()
		return nil
	}
	select {
	case <-c.proc.exited:
		// Already gone (crashed, or killed from outside); what it
		// started goes too.
		c.proc.killGroup()
		var err error
		if !c.stopping.Swap(true) {
			err = c.reportDeath()
		}
		c.release()
		c.proc.closePipes()
		c.sock.remove()
		return err
	default:
	}
	c.stopping.Store(true)
	start := time.Now()
	stage := c.proc.stop(shutdown, wait)
	c.release()
	c.sock.remove()
	// go-plugin plugins exit inside the Shutdown call, so its answer is a
	// closed connection (Unavailable, EOF): with the process gone right
	// after, that is a normal stop, not a failure.
	if shutdownErr != nil && !(stage == stoppedAsked && status.Code(shutdownErr) == codes.Unavailable) {
		c.logger.Debug("plugin Shutdown RPC failed", "error", shutdownErr)
	}
	if stage == stoppedSIGKILL {
		c.logger.Warn("plugin did not stop when asked; killed it", "after", time.Since(start).Round(time.Millisecond))
	}
	return nil
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

// Kill ends the plugin process at once with SIGKILL (TerminateProcess on
// Windows), for a plugin that hangs. Close must still be called to release the connection; it finds
// the process gone and only cleans up. Kill does nothing to a reattached
// plugin.
func (c *Client) Kill() {
	if c.proc != nil {
		c.stopping.Store(true)
		c.proc.forceKill()
	}
}
