package testutil

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// A child runs until killed; killed and not yet reaped, it is a zombie,
// which Exists still finds and Running does not.
func TestRunningIsFalseForAZombie(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "TESTUTIL_SLEEP=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	if !Running(pid) {
		t.Fatalf("Running says the sleeping child %d does not run", pid)
	}
	Kill(pid)
	deadline := time.Now().Add(10 * time.Second)
	for Running(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("Running still says the killed child %d runs after 10 s", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !Exists(pid) {
		t.Errorf("the killed, unreaped child %d no longer exists; the test expects a zombie", pid)
	}
}
