package host_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestStdioBombPeakMemory: a plugin that sends one 60 MiB stdio message
// of newlines, plain or gzip-compressed (60 KB on the wire), raises the
// host's peak memory (VmHWM, the host running as a process of its own) by
// under 48 MiB, and the host says it refused the message. A sink that
// split the message into a slice of lines took 1.6 GiB.
func TestStdioBombPeakMemory(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, gzip := range []string{"0", "1"} {
		t.Run("gzip="+gzip, func(t *testing.T) {
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), modeEnv+"=stdiohost", "PLUGKIT_TEST_GZIP="+gzip, "GORACE=atexit_sleep_ms=0")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			cmd.WaitDelay = 10 * time.Second
			timer := time.AfterFunc(12*time.Minute, func() { cmd.Process.Kill() })
			out, err := cmd.Output()
			timer.Stop()
			if err != nil {
				t.Fatalf("the host process: %v\n%s", err, stderr.String())
			}
			var before, after int
			var outcome string
			if _, err := fmt.Sscan(string(out), &before, &after, &outcome); err != nil {
				t.Fatalf("the host process printed %q: %v", out, err)
			}
			grown := float64(after-before) / 1024
			t.Logf("host VmHWM %.1f MiB before the message, %.1f MiB after (+%.1f MiB); the message was %s", float64(before)/1024, float64(after)/1024, grown, outcome)
			if grown >= 48 {
				t.Errorf("one stdio message of %d MiB raised the host's peak memory by %.1f MiB; want under 48 MiB", stdioBombSize>>20, grown)
			}
			if outcome != "refused" {
				t.Errorf("the host took the whole %d MiB message (%s); want it refused at the stdio message limit", stdioBombSize>>20, outcome)
			}
		})
	}
}
