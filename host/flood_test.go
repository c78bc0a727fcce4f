package host_test

import (
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestKnockFloodFromPlugin: a plugin process that sends 200,000 broker
// knocks and never reads the answers leaves the host under 100 goroutines
// above its baseline and under 32 MiB more heap and stacks, logs the flood
// a few times rather than once a knock, and Close leaves no goroutine
// behind. It runs multiplexed, the costlier case; the broker's own
// TestKnockFloodIsBounded covers both modes, over the same Run and the
// same stream wiring.
func TestKnockFloodFromPlugin(t *testing.T) {
	dir, err := os.MkdirTemp("", "pkflood") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	leaks := goleak.IgnoreCurrent()
	baseGoroutines := runtime.NumGoroutine()
	baseMem := testutil.UsedMemory()

	var logs syncBuffer
	cfg := config(t, "knockflood")
	cfg.MultiplexBroker = true
	cfg.Security = host.Plaintext() // the plugin is hand-made, in plain text
	cfg.Listen.UnixSocketDir = dir
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	c := start(t, cfg)
	maxGoroutines := 0
	deadline := time.Now().Add(60 * time.Second)
	// The host may give up on the plugin before the flood is
	// over (it does not read for 10 s): that ends the flood too.
	for !strings.Contains(logs.String(), "knock flood") && time.Now().Before(deadline) {
		maxGoroutines = max(maxGoroutines, runtime.NumGoroutine())
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "knock flood") {
		t.Fatalf("the plugin did not finish its flood in 60 s; logs:\n%.2000s", logs.String())
	}
	maxGoroutines = max(maxGoroutines, runtime.NumGoroutine())
	grown := int64(testutil.UsedMemory()) - int64(baseMem)
	sent := "all sent"
	if !strings.Contains(logs.String(), "knock flood sent") {
		sent = "the host gave up on the plugin first"
	}
	t.Logf("after %d knocks (%s): %d goroutines at most (baseline %d), heap and stacks grown by %.1f MiB",
		knockFloodKnocks, sent, maxGoroutines, baseGoroutines, float64(grown)/(1<<20))
	if maxGoroutines-baseGoroutines >= 100 {
		t.Errorf("%d goroutines during the flood, %d above the baseline; want under 100", maxGoroutines, maxGoroutines-baseGoroutines)
	}
	if grown >= 32<<20 {
		t.Errorf("heap and stacks grew by %.1f MiB during the flood; want under 32 MiB", float64(grown)/(1<<20))
	}

	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := goleak.Find(leaks, goleak.IgnoreTopFunction("github.com/plugkit/plugkit/host.spawner")); err != nil {
		t.Errorf("left behind after Close: %v", err)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n > 10 {
		t.Errorf("%d warnings for one flood; want a few, rate-limited:\n%.2000s", n, logs.String())
	}
}
