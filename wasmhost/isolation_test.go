package wasmhost_test

import (
	"cmp"
	"context"
	"errors"
	"net"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/wasmhost"
)

// TestIsolationProbes: a guest granted one writable and one read-only
// directory reads and writes only there; /etc/passwd, a write elsewhere,
// dialling out and a host variable it was not given all fail, each as
// the call's error, and the guest (and host) keep answering.
func TestIsolationProbes(t *testing.T) {
	rw, ro, outside := testutil.TempDir(t), testutil.TempDir(t), testutil.TempDir(t)
	if err := os.WriteFile(filepath.Join(ro, "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("PLUGKIT_GUEST_SECRET", "s3cret")
	t.Setenv("PLUGKIT_GUEST_GIVEN", "yes")
	// The guest sees rw where the host does, except on Windows, whose
	// paths (C:\...) are not a guest's.
	rwGuest := ""
	if runtime.GOOS == "windows" {
		rwGuest = "/rw"
	}
	rt := wasmhost.New(testConfig(wasmhost.Config{Dirs: []wasmhost.Dir{{HostPath: rw, GuestPath: rwGuest, Writable: true}, {HostPath: ro, GuestPath: "/ro"}}}))
	rwInGuest := cmp.Or(rwGuest, rw)
	t.Cleanup(func() { rt.Close(context.Background()) }) // after the Clients
	cmd := command(t, rt)
	cmd.InheritEnv = []string{"PLUGKIT_GUEST_GIVEN"}
	c := startGuest(t, cmd)

	for _, key := range []string{"write:" + path.Join(filepath.ToSlash(rwInGuest), "new"), "read:/ro/data", "env:PLUGKIT_GUEST_GIVEN"} {
		if err := exists(c, key); err != nil {
			t.Errorf("%s: %v; want it granted", key, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(rw, "new")); err != nil || string(b) != "guest was here" {
		t.Errorf("the guest's write in its writable directory: %q %v", b, err)
	}
	for _, key := range []string{
		"read:/etc/passwd",
		"write:" + filepath.Join(outside, "escaped"),
		"write:/ro/new",
		"write:" + path.Join(filepath.ToSlash(rwInGuest), "..", filepath.Base(outside), "escaped"),
		"dial:" + ln.Addr().String(),
		"env:PLUGKIT_GUEST_SECRET",
	} {
		if err := exists(c, key); err == nil {
			t.Errorf("%s succeeded; want it refused", key)
		}
		if err := exists(c, "yes"); err != nil {
			t.Fatalf("after %s the guest no longer answers: %v", key, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Error("the guest wrote outside its directories")
	}
}

// TestMemoryLimit: a guest that allocates past its limit ends with a
// MemoryError, and the runtime starts the next guest as before.
func TestMemoryLimit(t *testing.T) {
	rt := sharedRuntimeWith(64<<20, 0)
	waitEnded(t, rt)
	c := startGuest(t, command(t, rt))
	if err := exists(c, "alloc"); err == nil {
		t.Fatal("allocating without bound succeeded")
	}
	<-c.Exited()
	err := c.Close()
	var ue *host.ExitError
	var me *wasmhost.MemoryError
	if !errors.As(err, &ue) || !ue.InUse || !errors.As(err, &me) || me.Limit != 64<<20 {
		t.Errorf("Close: %v; want an ExitError (InUse) with a MemoryError of 64 MiB", err)
	}
	if !strings.Contains(err.Error(), "ran out of memory") {
		t.Errorf("Close: %v; want it to say out of memory", err)
	}
	next := startGuest(t, command(t, rt))
	if err := exists(next, "yes"); err != nil {
		t.Errorf("the next guest: %v", err)
	}
	next.Close()
	waitEnded(t, rt)
}

// TestCPUBudget: a call that spins forever costs the guest its life
// after its CPU budget; Close says why, and the host goes on.
func TestCPUBudget(t *testing.T) {
	rt := sharedRuntimeWith(0, 300*time.Millisecond)
	waitEnded(t, rt)
	c := startGuest(t, command(t, rt))
	if err := exists(c, "yes"); err != nil {
		t.Fatal(err)
	}
	if err := exists(c, "spin"); err == nil {
		t.Fatal("a spinning call answered")
	}
	<-c.Exited()
	var be *host.BudgetError
	if err := c.Close(); !errors.As(err, &be) {
		t.Errorf("Close: %v; want a BudgetError", err)
	}
	next := startGuest(t, command(t, rt))
	if err := exists(next, "yes"); err != nil {
		t.Errorf("the next guest: %v", err)
	}
	next.Close()
	waitEnded(t, rt)
}

// TestGuestDiesWithHost: Close ends a guest that waits for input and one
// that spins (without a budget), and a start whose context ends before
// the handshake leaves no guest behind.
func TestGuestDiesWithHost(t *testing.T) {
	rt := sharedRuntime()
	waitEnded(t, rt) // the guests of earlier tests
	idle := startGuest(t, command(t, rt))
	idle.Close()
	waitEnded(t, rt)

	cmd := command(t, rt)
	cmd.Timeouts.Stop = 200 * time.Millisecond
	spinning := startGuest(t, cmd)
	go exists(spinning, "spin")
	time.Sleep(100 * time.Millisecond) // let the call reach the guest
	spinning.Close()
	waitEnded(t, rt)

	cmd = command(t, rt)
	cmd.Env = []string{"PLUGKIT_GUEST_STALL=1"}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := host.Start(ctx, cmd, host.Options{Versions: []int{1}, Logger: testutil.Logger(t)}); err == nil {
		t.Fatal("a guest that never handshakes started")
	}
	waitEnded(t, rt)
}

// TestIsolationSymlinks: symlinks out of a guest's grants, left by the
// host in a read-only grant or found in a writable one (a guest could
// make the same), lead nowhere: reading and writing through them fails
// with "operation not permitted" (EPERM), a write in the read-only grant
// with "read-only file system" (EROFS), and the file outside is
// untouched.
func TestIsolationSymlinks(t *testing.T) {
	if testutil.UnderWine() {
		t.Skip("Wine's symbolic links are not followed as directories: the escape tests need unix or real Windows")
	}
	rw, ro, outside := testutil.TempDir(t), testutil.TempDir(t), testutil.TempDir(t)
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ro, "etc")); err != nil {
		if runtime.GOOS == "windows" {
			t.Skipf("this host makes no symbolic links: %v", err)
		}
		t.Fatal(err)
	}
	if err := os.Symlink(strings.Repeat("../", 40), filepath.Join(rw, "up")); err != nil {
		t.Fatal(err)
	}
	through := "/rw/up/" + strings.TrimPrefix(filepath.ToSlash(outside), filepath.VolumeName(outside)+"/")
	rt := wasmhost.New(testConfig(wasmhost.Config{Dirs: []wasmhost.Dir{{HostPath: rw, GuestPath: "/rw", Writable: true}, {HostPath: ro, GuestPath: "/ro"}}}))
	t.Cleanup(func() { rt.Close(context.Background()) }) // after the Clients
	c := startGuest(t, command(t, rt))
	if err := exists(c, "read:/ro/data"); err != nil {
		t.Errorf("read:/ro/data: %v; want it granted", err)
	}
	for _, probe := range []struct{ key, want string }{
		{"read:/ro/etc/secret", "operation not permitted"},
		{"read:" + through + "/secret", "operation not permitted"},
		{"write:" + through + "/escaped", "operation not permitted"},
		{"write:/ro/etc/escaped", "read-only file system"},
	} {
		if err := exists(c, probe.key); err == nil || !strings.Contains(strings.ToLower(err.Error()), probe.want) {
			t.Errorf("%s: %v; want %s", probe.key, err, probe.want)
		}
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "host secret" {
		t.Errorf("the host's file outside the grants: %q %v", b, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("the guest wrote beside the host's file outside its grants: %d entries", len(ents))
	}
}
