//go:build !wasip1

package plugin

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// serveContext is Serve's context. Normally interrupts are ignored (the
// host decides when its plugins stop) and SIGTERM stops the plugin; in
// debug mode a person started the plugin, so an interrupt stops it too.
// A plugin its host started ignores SIGPIPE too: its standard output and
// error are pipes to its host, and once the host is gone, Go would end
// the plugin with SIGPIPE at its first write there (its stop's warning)
// before its clean-up (its socket directory stayed behind: interop's
// TestPlugkitPluginOutlivesNoGoPluginHost); such a write fails with EPIPE
// instead.
func serveContext(cfg Config) (context.Context, context.CancelFunc) {
	lookup := os.LookupEnv
	if debug, _ := debugRequested(cfg, lookup); debug {
		return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	}
	if addr, _ := lookup(EnvListen); addr != "" {
		// A service (service.go): Ctrl-C drains it too.
		return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	}
	signal.Ignore(os.Interrupt, syscall.SIGPIPE)
	return signal.NotifyContext(context.Background(), syscall.SIGTERM)
}
