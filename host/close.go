package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// Close stops the plugin and releases everything: the Shutdown RPC, a
// wait, SIGTERM, a wait, SIGKILL; the process is always reaped. A
// reattached plugin is asked to shut down and then only disconnected:
// this host did not start it. Close is safe to call more than once.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Client) close() error {
	wait := orDefault(c.cfg.StopTimeout, DefaultStopTimeout)
	shutdown := func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if _, err := pluginpb.NewGRPCControllerClient(c.conn).Shutdown(ctx, &pluginpb.Empty{}); err != nil {
			c.logger.Debug("plugin Shutdown RPC failed", "error", err)
		}
	}
	if c.proc == nil {
		shutdown()
		c.release()
		return nil
	}
	select {
	case <-c.proc.exited:
		// Already gone (crashed, or killed from outside).
		c.release()
		c.proc.closePipes()
		c.removeDeadSocket()
		return nil
	default:
	}
	start := time.Now()
	killed := c.proc.stop(shutdown, wait)
	c.release()
	c.removeDeadSocket()
	if killed {
		c.logger.Warn("plugin did not stop when asked; killed it", "after", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// release closes the connection and waits for the background goroutines.
func (c *Client) release() {
	c.broker.Close()
	c.cancelBG()
	c.conn.Close()
	c.bg.Wait()
}

// Kill ends the plugin process at once with SIGKILL, for a plugin that
// hangs. Close must still be called to release the connection; it finds
// the process gone and only cleans up. Kill does nothing to a reattached
// plugin.
func (c *Client) Kill() {
	if c.proc != nil {
		c.proc.cmd.Process.Kill()
	}
}

// removeDeadSocket removes what a plugin that died without cleaning up
// (a crash, SIGKILL) leaves behind: its unix socket, and the socket's
// directory when that is a plugkit plugin's private one (plugkit-*) and is
// then empty. It runs only after this host reaped the process, so nothing
// listens there any more; a reattached plugin's socket is never touched.
func (c *Client) removeDeadSocket() {
	if c.proc == nil || c.line.Network != "unix" {
		return
	}
	if fi, err := os.Lstat(c.line.Address); err == nil && fi.Mode()&os.ModeSocket != 0 {
		os.Remove(c.line.Address)
	}
	if dir := filepath.Dir(c.line.Address); strings.HasPrefix(filepath.Base(dir), "plugkit-") {
		os.Remove(dir) // fails, harmlessly, unless empty
	}
}
