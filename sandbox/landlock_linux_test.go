package sandbox_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/sandbox"
)

// On this project's machines (Landlock ABI 7) both modes give namespaces
// and Landlock, and Landlock denies what the mounts leave open: the
// plugin's own /proc/self files, which its user could write.
func TestSandboxLandlock(t *testing.T) { bothModes(t, testSandboxLandlock) }

func testSandboxLandlock(t *testing.T) {
	if got, err := (sandbox.Runner{}).Check(); err != nil || got != sandbox.NamespacesAndLandlock {
		t.Fatalf("Check: %v, %v; want NamespacesAndLandlock (the project's machines have user namespaces and Landlock)", got, err)
	}
	c := startSandboxed(t, sandbox.Runner{Minimum: sandbox.NamespacesAndLandlock})
	if got := do(t, c, "openw /proc/self/comm"); got != "open /proc/self/comm: permission denied" {
		t.Errorf("writing its own /proc/self/comm: %q; want permission denied (Landlock)", got)
	}
	if got := do(t, c, "write /tmp/x"); got != "ok" {
		t.Errorf("writing its private /tmp under Landlock: %s", got)
	}
	if got := do(t, c, "write /dev/null"); got != "ok" {
		t.Errorf("writing /dev/null under Landlock: %s", got)
	}
}

// Where user namespaces are off and the host is not root, the Runner
// refuses, naming the sysctl, unless the caller accepts Landlock alone;
// then Landlock confines the plugin's writes to its granted directories,
// denies it TCP, and keeps it from signalling the host.
func TestSandboxLandlockOnly(t *testing.T) {
	t.Run(rootlessMode, func(t *testing.T) {
		if !rootless() {
			runRootless(t)
			return
		}
		testSandboxLandlockOnly(t)
	})
}

func testSandboxLandlockOnly(t *testing.T) {
	sysctl, err := userNamespacesOff()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sysctl) })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if c, err := config(t, sandbox.WithSysctlDir(sandbox.Runner{}, sysctl)).start(ctx); err == nil {
		c.Close()
		t.Fatal("with user namespaces off, a rootless host started a plugin with Runner.Minimum 0 (Namespaces)")
	} else if !strings.Contains(err.Error(), "user.max_user_namespaces is 0") || !strings.Contains(err.Error(), "sandbox.LandlockOnly") {
		t.Errorf("Start: %v; want the sysctl named and LandlockOnly offered", err)
	}

	granted := t.TempDir()
	r := sandbox.WithSysctlDir(sandbox.Runner{Minimum: sandbox.LandlockOnly, Writable: granted}, sysctl)
	if got, err := r.Check(); err != nil || got != sandbox.LandlockOnly {
		t.Fatalf("Check: %v, %v; want LandlockOnly", got, err)
	}
	c, err := config(t, r).start(ctx)
	if err != nil {
		t.Fatalf("Start with Landlock alone: %v", err)
	}
	defer c.Close()

	if got := do(t, c, "write "+filepath.Join(granted, "in")); got != "ok" {
		t.Errorf("writing the granted directory: %s", got)
	}
	// The host's user may write /var/tmp; the plugin, that user too, may not.
	outside, err := os.MkdirTemp("/var/tmp", "plugkit-landlock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(outside)
	if got := do(t, c, "write "+filepath.Join(outside, "escaped")); !strings.Contains(got, "permission denied") {
		t.Errorf("writing %s outside the granted directory: %q; want permission denied", outside, got)
	}
	if got := do(t, c, "read /etc/hostname"); strings.Contains(got, "permission denied") {
		t.Errorf("reading a host file: %q", got)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	if got := do(t, c, "dial "+ln.Addr().String()); !strings.Contains(got, "socket: operation not permitted") {
		t.Errorf("dialing the host's TCP listener: %q; want operation not permitted (the seccomp filter refuses IP sockets; Landlock ABI 4 would refuse the connection)", got)
	}
	// Issue 36: nor UDP, which Landlock does not bound.
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	if got := do(t, c, "udp "+udp.LocalAddr().String()); !strings.Contains(got, "socket: operation not permitted") {
		t.Errorf("sending UDP to the host's %s: %q; want operation not permitted (the seccomp filter)", udp.LocalAddr(), got)
	}
	udp.SetReadDeadline(time.Now().Add(100 * time.Millisecond)) // a datagram sent went out before the answer
	if n, from, err := udp.ReadFrom(make([]byte, 64)); err == nil {
		t.Errorf("the host received %d bytes of UDP from %v, sent by the plugin", n, from)
	}
	if got := do(t, c, "signal "+strconv.Itoa(os.Getpid())); got != "operation not permitted" {
		t.Errorf("signalling the host: %q; want operation not permitted (Landlock ABI 6 scope)", got)
	}
	status := do(t, c, "status")
	for _, want := range []string{"CapEff: 0000000000000000", "NoNewPrivs: 1", "Seccomp: 2"} {
		if !strings.Contains(status, want) {
			t.Errorf("the plugin's status lacks %q:\n%s", want, status)
		}
	}
	if got := do(t, c, "ptrace"); got != "operation not permitted" {
		t.Errorf("ptrace under Landlock alone: %q; want operation not permitted (seccomp)", got)
	}
	callback(t, c, healthpb.HealthCheckResponse_SERVING)
}
