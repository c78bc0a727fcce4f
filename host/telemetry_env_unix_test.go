//go:build unix

package host_test

import (
	"bytes"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
)

// TestPluginFlushesSpansOnExit (issue 40 point 9): with a batch delay of
// ten minutes, so that only a flush sends anything, a launched plugin's
// serving span reaches the collector when it exits: on the host's Close,
// and on a SIGTERM nobody asked the host for. A plugin idle after its
// call exports the call's span by itself, so that a SIGKILL then loses
// nothing (found by a run of plugkit demo against an OpenTelemetry
// Collector: 11 of the host's 25 calls had no span of the plugin, those
// of the fs process the demo kills).
func TestPluginFlushesSpansOnExit(t *testing.T) {
	for _, how := range []string{"Close", "SIGTERM", "SIGKILL when idle"} {
		t.Run(how, func(t *testing.T) {
			recv := otlpEnv(t, "http/protobuf")
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")
			tp, _ := newTracer(t)
			cfg := config(t, "traced")
			cfg.Telemetry = host.Telemetry{TracerProvider: tp}
			c := start(t, cfg)
			root, _ := tracedInit(t, tp, c, serveHealth(t, c))
			served := func() {
				t.Helper()
				if parent := recv.serverSpan(t, root.TraceID(), "objectstore.v1.ObjectStore/Init"); len(parent) == 0 || bytes.Equal(parent, make([]byte, 8)) {
					t.Errorf("the plugin's serving span has no parent")
				}
			}
			if how == "Close" {
				if err := c.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				served()
				return
			}
			sig := syscall.SIGTERM
			if how == "SIGKILL when idle" {
				served() // before the kill, which no flush survives
				sig = syscall.SIGKILL
			}
			if err := syscall.Kill(c.Pid(), sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.Exited():
			case <-time.After(20 * time.Second):
				t.Fatalf("the plugin did not exit within 20s of %v", sig)
			}
			served()
		})
	}
}
