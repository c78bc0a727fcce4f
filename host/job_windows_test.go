package host_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestHostDeathKillsThePluginsChildren: when the host process dies, the
// plugin's job object goes with its last handle, and with it the plugin
// and the child the plugin started (a process that does not watch its
// parent, which only the job can stop). Windows only: on Linux the
// parent-death signal reaches the plugin alone.
func TestHostDeathKillsThePluginsChildren(t *testing.T) {
	pidFile := filepath.Join(testutil.TempDir(t), "pids")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hostCmd := exec.Command(self)
	hostCmd.Env = append(os.Environ(), modeEnv+"=jobhost", "PLUGKIT_TEST_PIDFILE="+pidFile)
	if err := hostCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hostCmd.Process.Kill(); hostCmd.Wait() })
	var plugin, child int
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, err := os.ReadFile(pidFile)
		if err == nil {
			if _, err := fmt.Sscan(string(data), &plugin, &child); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the host did not start its plugin within 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { testutil.Kill(plugin); testutil.Kill(child) }) // only if the test failed
	if !testutil.Running(plugin) || !testutil.Running(child) {
		t.Fatalf("the plugin (%d) or its child (%d) is not running", plugin, child)
	}
	hostCmd.Process.Kill() // TerminateProcess: no cleanup of its own runs
	hostCmd.Wait()
	deadline = time.Now().Add(10 * time.Second)
	for (testutil.Running(plugin) || testutil.Running(child)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if testutil.Running(child) {
		t.Errorf("the plugin's child %d outlived the host", child)
	}
	if testutil.Running(plugin) {
		t.Errorf("the plugin %d outlived the host", plugin)
	}
}
