package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLeftBehindNamesFilesLeft(t *testing.T) {
	dir := TempDir(t)
	var out strings.Builder
	if leftBehind(&out, dir, 0) {
		t.Fatalf("an empty directory was reported: %s", out.String())
	}
	if err := os.MkdirAll(filepath.Join(dir, "plugkit-123"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugkit-123", "plugin.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !leftBehind(&out, dir, 0) {
		t.Fatal("a directory left in the temporary directory was not reported")
	}
	if !strings.Contains(out.String(), "plugkit-123/{plugin.sock}") {
		t.Errorf("the report does not name what was left: %s", out.String())
	}
}

func TestLeftBehindNamesAndKillsProcessesLeft(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux lets Main read other processes' environments")
	}
	dir := TempDir(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), "TESTUTIL_SLEEP=1", TidyEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })

	// Another directory's mark is not this one's.
	var out strings.Builder
	if leftBehind(&out, dir+"x", 0) {
		t.Fatalf("a process of another directory was reported: %s", out.String())
	}
	if !leftBehind(&out, dir, 0) {
		t.Fatal("a process left running was not reported")
	}
	if !strings.Contains(out.String(), "process "+strconv.Itoa(cmd.Process.Pid)+" running") {
		t.Errorf("the report does not name the process: %s", out.String())
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatal("the process left running was not killed")
	}
}
