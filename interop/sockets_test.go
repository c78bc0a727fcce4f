package interop_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
)

// contents lists everything below dir, for failure messages and checks.
func contents(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if p != dir {
			out = append(out, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	return out
}

// TestNoStaleGoPluginSockets: go-plugin plugins never remove their socket
// when they are rejected or killed. Each plugin gets a private directory
// its plugkit host removes after reaping it, and a directory left by a
// SIGKILLed host is swept by the next host.
func TestNoStaleGoPluginSockets(t *testing.T) {
	testutil.NotOnWindows(t, "socket files in the host's socket directory; Windows plugins listen on TCP")
	t.Run("version rejection", testNoSocketAfterRejection)
	t.Run("plugin SIGKILL", testNoSocketAfterPluginKill)
	t.Run("host SIGKILL", testNextHostSweepsKilledHost)
}

// testNoSocketAfterRejection: a go-plugin plugin with no version in common
// with its host leaves nothing in the socket directory.
func testNoSocketAfterRejection(t *testing.T) {
	base := testutil.TempDir(t)
	cfg := goPluginConfig(t, "gp-store", 1, 7)
	cfg.Listen.UnixSocketDir = base
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if c, err := host.Start(ctx, cfg.Command, cfg.Options); err == nil {
		c.Close()
		t.Fatal("Start succeeded with no version in common")
	}
	if left := contents(t, base); len(left) != 0 {
		t.Errorf("left behind after the rejection: %v", left)
	}
}

// testNoSocketAfterPluginKill: the socket of a SIGKILLed go-plugin plugin,
// in its private directory, is removed by its host's Close.
func testNoSocketAfterPluginKill(t *testing.T) {
	base := testutil.TempDir(t)
	cfg := goPluginConfig(t, "gp-store", 4)
	cfg.Listen.UnixSocketDir = base
	c := startHost(t, cfg)
	if !strings.HasPrefix(c.ReattachConfig().Addr.String, base+"/plugkit-host-") {
		t.Fatalf("the go-plugin plugin listens on %s, not in a private directory under %s", c.ReattachConfig().Addr.String, base)
	}
	testutil.Kill(c.Pid())
	<-c.Exited()
	if _, err := os.Stat(c.ReattachConfig().Addr.String); err != nil {
		t.Fatalf("the killed plugin's socket is already gone (%v): the test proves nothing", err)
	}
	c.Close()
	if left := contents(t, base); len(left) != 0 {
		t.Errorf("left behind after the plugin was SIGKILLed: %v", left)
	}
}

// startBlockingHost runs a host in a child process (the test binary in
// role, with env added) that launches a plugin and reports the plugin's
// pid; which names the host in failures. It returns the host's command, a
// channel closed when the host has been waited for, and the plugin's pid.
func startBlockingHost(t *testing.T, role, which string, env ...string) (*exec.Cmd, <-chan struct{}, int) {
	t.Helper()
	cmd := exec.Command(self(t))
	cmd.Env = append(cmd.Environ(), append(childEnv(role), env...)...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	pidc := make(chan int, 1)
	go func() {
		var pid int
		fmt.Fscanf(bufio.NewReader(out), "plugin-pid %d\n", &pid)
		pidc <- pid
		io.Copy(io.Discard, out)
	}()
	var pid int
	select {
	case pid = <-pidc:
	case <-time.After(20 * time.Second):
		t.Fatalf("the %s host did not report its plugin within 20 s; stderr:\n%s", which, stderr.String())
	}
	if pid <= 0 {
		t.Fatalf("the %s host failed; stderr:\n%s", which, stderr.String())
	}
	t.Cleanup(func() { testutil.Kill(pid) }) // only if the test failed
	return cmd, done, pid
}

// testNextHostSweepsKilledHost: a SIGKILLed host's plugin exits and leaves
// its directory behind; the next host sweeps it, and leaves nothing of its
// own after Close.
func testNextHostSweepsKilledHost(t *testing.T) {
	base := testutil.TempDir(t)
	cmd, done, pid := startBlockingHost(t, "pk-host-block", "plugkit", "PLUGKIT_INTEROP_SOCKDIR="+base)
	cmd.Process.Kill()
	<-done
	if !waitFor(5*time.Second, func() bool { return !testutil.Running(pid) }) {
		t.Fatalf("plugin %d still running 5 s after its host was SIGKILLed", pid)
	}
	left := contents(t, base)
	if len(left) == 0 {
		t.Fatal("the SIGKILLed host left nothing behind: the test proves nothing")
	}
	// The next host sweeps what the dead one left, and leaves nothing
	// of its own after Close.
	cfg := goPluginConfig(t, "gp-store", 4)
	cfg.Listen.UnixSocketDir = base
	c := startHost(t, cfg)
	for _, p := range left {
		if _, err := os.Lstat(filepath.Join(base, p)); err == nil {
			t.Errorf("%s, left by the SIGKILLed host, was not swept", p)
		}
	}
	c.Close()
	if left := contents(t, base); len(left) != 0 {
		t.Errorf("left behind after a clean Close: %v", left)
	}
}
