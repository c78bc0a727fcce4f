package testutil

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// This process exists; a child that Kill killed and that was reaped does
// not.
func TestKillAndExists(t *testing.T) {
	if !Exists(os.Getpid()) {
		t.Fatal("Exists says this very process does not exist")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "TESTUTIL_SLEEP=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !Exists(pid) {
		t.Fatalf("the running child %d does not exist", pid)
	}
	Kill(pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the child exited cleanly, not killed")
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the child still runs 10 s after Kill")
	}
	if Exists(pid) {
		t.Errorf("the killed and reaped child %d still exists", pid)
	}
}

// TestMain lets the test binary be TestKillAndExists's child: with
// TESTUTIL_SLEEP=1 it sleeps until killed (at most a minute).
func TestMain(m *testing.M) {
	if os.Getenv("TESTUTIL_SLEEP") == "1" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(Main(m))
}
