//go:build unix

package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
)

// socketGroup is the group the socket group tests give the sockets to:
// this user's, or, for root, another one (1), so that the change shows.
func socketGroup() string {
	if os.Getuid() == 0 {
		return "1"
	}
	return strconv.Itoa(os.Getgid())
}

// TestUnixSocketGroup checks go-plugin's UnixSocketConfig.Group: the
// host's private directory and the plugin's socket belong to the group and
// are group-accessible, and the plugin still serves.
func TestUnixSocketGroup(t *testing.T) {
	group := socketGroup()
	cfg := config(t, "kv")
	cfg.Listen.UnixSocketGroup = group
	c := start(t, cfg)
	if !exists(t, c, "yes-1") {
		t.Fatal("Exists answered wrongly")
	}
	sockDir := filepath.Dir(c.ReattachConfig().Addr.String)
	hostDir := filepath.Dir(sockDir)
	for _, tc := range []struct {
		path string
		mode os.FileMode
	}{{hostDir, 0o770}, {sockDir, 0o750}, {c.ReattachConfig().Addr.String, 0o660}} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		gid := testutil.FileGID(fi)
		if strconv.Itoa(gid) != group || fi.Mode().Perm() != tc.mode {
			t.Errorf("%s: group %d, mode %v; want group %s, mode %v", tc.path, gid, fi.Mode().Perm(), group, tc.mode)
		}
	}
}

// TestRunnerSocketGroup checks Launch.SocketGroup: a runner that runs the
// plugin as another user gives that user's group the host's private
// directory (sticky, so the plugin cannot rename the host's entries) and
// the host's brokered sockets.
func TestRunnerSocketGroup(t *testing.T) {
	group := socketGroup()
	cfg := config(t, "kv")
	seen := "unset"
	cfg.Runner = testutil.RunnerFunc[*host.Launch](func(l *host.Launch) error {
		seen = l.SocketGroup
		l.SocketGroup = group
		return nil
	})
	c := start(t, cfg)
	if seen != "" {
		t.Errorf("the runner saw Launch.SocketGroup %q; want Command.Listen.UnixSocketGroup's, empty", seen)
	}
	hostDir := filepath.Dir(filepath.Dir(c.ReattachConfig().Addr.String))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Broker().Serve(ctx, c.Broker().NextID(), func(*grpc.Server) {}); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(hostDir)
	if err != nil {
		t.Fatal(err)
	}
	var brokered string
	for _, e := range entries {
		if e.IsDir() && filepath.Join(hostDir, e.Name()) != filepath.Dir(c.ReattachConfig().Addr.String) {
			brokered = filepath.Join(hostDir, e.Name(), "plugin.sock")
		}
	}
	if brokered == "" {
		t.Fatalf("no brokered socket directory in %s: %v", hostDir, entries)
	}
	for _, tc := range []struct {
		path string
		mode os.FileMode
	}{{hostDir, 0o770 | os.ModeSticky | os.ModeDir}, {filepath.Dir(brokered), 0o750 | os.ModeDir}, {brokered, 0o660 | os.ModeSocket}} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		gid := testutil.FileGID(fi)
		if strconv.Itoa(gid) != group || fi.Mode() != tc.mode {
			t.Errorf("%s: group %d, mode %v; want group %s, mode %v", tc.path, gid, fi.Mode(), group, tc.mode)
		}
	}
}

// TestUnixSocketGroupUnknown checks that a group that does not exist is
// refused before the plugin runs, naming the setting.
func TestUnixSocketGroupUnknown(t *testing.T) {
	cfg := config(t, "kv")
	cfg.Listen.UnixSocketGroup = "no-such-group-plugkit"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := host.Start(ctx, cfg.Command, cfg.Options)
	if err == nil {
		c.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "UnixSocketGroup") || !strings.Contains(err.Error(), "no-such-group-plugkit") {
		t.Fatalf("Start: %v; want an error naming Command.Listen.UnixSocketGroup and the group", err)
	}
}

// TestOutputStderr checks go-plugin's ClientConfig.Stderr: the plugin's
// stderr lines arrive as written, hostile bytes and long lines included,
// besides the log records.
func TestOutputStderr(t *testing.T) {
	var raw testutil.Buffer
	cfg := config(t, "hostile")
	cfg.Output.Stderr = &raw
	start(t, cfg)
	want := []string{
		`{"@level":"error","@message":{"an":"object"},"@module":"x"}` + "\n",
		"\x00\xff\xfe binary \x1b[31m junk \xc3\x28\n",
		"[WARN] a text warning\n",
		strings.Repeat("L", 200<<10) + "\n",
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := raw.String()
		missing := ""
		for _, w := range want {
			if !strings.Contains(got, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Output.Stderr lacks %.60q (got %d bytes)", missing, len(got))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
