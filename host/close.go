package host

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// Close stops the plugin and releases everything: the Shutdown RPC, a
// wait, SIGTERM, a wait, SIGKILL (on Windows, which has no SIGTERM: the
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
	wait := orDefault(c.cfg.StopTimeout, DefaultStopTimeout)
	var shutdownErr error
	shutdown := func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		shutdownErr = nil
		_, shutdownErr = pluginpb.NewGRPCControllerClient(c.conn).Shutdown(ctx, &pluginpb.Empty{})
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
