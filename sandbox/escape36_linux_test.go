package sandbox_test

// Issue 36, points 3, 4 and 6 and its "also" line: set-user-ID files left
// in a writable grant, the host user's supplementary groups, the host's
// environment, socket families, the plugin's cgroup view.

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/sandbox"
)

// A plugin leaves no set-user-ID or set-group-ID file in its writable
// directory, for another user of the host to run as the plugin's user
// (the host's, in the rootless and LandlockOnly modes): the seccomp
// filter refuses the bits in every call that sets a mode, and in the
// namespace modes the grant is mounted nosuid and nodev besides.
func TestSandboxGrantNoSetID(t *testing.T) { allModes(t, testSandboxGrantNoSetID) }

func testSandboxGrantNoSetID(t *testing.T, r sandbox.Runner) {
	r.Writable = t.TempDir()
	c := startSandboxed(t, r)
	got := do(t, c, "setuid "+r.Writable)
	for _, l := range strings.Split(got, "\n") {
		if what, res, _ := strings.Cut(l, ": "); res != "operation not permitted" {
			t.Errorf("%s in the granted directory: %q; want operation not permitted", what, res)
		}
	}
	entries, err := os.ReadDir(r.Writable)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("the plugin left %s with mode %v in the granted directory", e.Name(), fi.Mode())
		}
	}
	if r.Minimum == sandbox.LandlockOnly {
		return // no mount of its own
	}
	m := mountsOf(t, c)
	for _, dir := range []string{r.Writable, "/tmp"} {
		_, o, _ := strings.Cut(m[dir], " ") // "type options"
		opts := strings.Split(o, ",")
		if !contains(opts, "nosuid") || !contains(opts, "nodev") {
			t.Errorf("%s in the sandbox is mounted %q; want nosuid and nodev", dir, m[dir])
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// The plugin's environment holds what the host names, and nothing else of
// the host's: no token of the host's leaks to it.
func TestSandboxEnvironment(t *testing.T) { allModes(t, testSandboxEnvironment) }

func testSandboxEnvironment(t *testing.T, r sandbox.Runner) {
	t.Setenv("PLUGKIT_TEST_SECRET_TOKEN", "s3cret")
	c := startSandboxed(t, r)
	env := strings.Split(do(t, c, "env"), "\n")
	if contains(env, "PLUGKIT_TEST_SECRET_TOKEN=s3cret") {
		t.Errorf("the plugin sees the host's PLUGKIT_TEST_SECRET_TOKEN; want the host's variables only where named")
	}
	if !contains(env, probeEnv+"=1") {
		t.Errorf("the plugin lacks host.Command.Env's %s: %q", probeEnv, env)
	}
	c.Close()

	// What the host names, it gets.
	t.Setenv("PLUGKIT_TEST_NAMED", "named")
	named := r
	named.InheritEnv = []string{"PLUGKIT_TEST_NAMED", "PLUGKIT_TEST_UNSET"}
	env = strings.Split(do(t, startSandboxed(t, named), "env"), "\n")
	if !contains(env, "PLUGKIT_TEST_NAMED=named") || contains(env, "PLUGKIT_TEST_SECRET_TOKEN=s3cret") {
		t.Errorf("with InheritEnv %q, the plugin's environment is %q; want PLUGKIT_TEST_NAMED and no PLUGKIT_TEST_SECRET_TOKEN", named.InheritEnv, env)
	}
	// What host.Command.InheritEnv names, it gets too, and nothing else
	// of the host's.
	cfg := config(t, r)
	cfg.InheritEnv = []string{"PLUGKIT_TEST_NAMED"}
	env = strings.Split(do(t, startCfg(t, cfg), "env"), "\n")
	if !contains(env, "PLUGKIT_TEST_NAMED=named") || contains(env, "PLUGKIT_TEST_SECRET_TOKEN=s3cret") {
		t.Errorf("with host.Command.InheritEnv %q, the plugin's environment is %q; want PLUGKIT_TEST_NAMED and no PLUGKIT_TEST_SECRET_TOKEN", cfg.InheritEnv, env)
	}
	// A variable of host.Command.Env is the plugin's, even where the host
	// has one of that name it does not pass.
	cfg = config(t, r)
	cfg.Env = append(cfg.Env, "PLUGKIT_TEST_SECRET_TOKEN=given")
	if env := strings.Split(do(t, startCfg(t, cfg), "env"), "\n"); !contains(env, "PLUGKIT_TEST_SECRET_TOKEN=given") || contains(env, "PLUGKIT_TEST_SECRET_TOKEN=s3cret") {
		t.Errorf("with the variable in host.Command.Env, the plugin's environment is %q; want PLUGKIT_TEST_SECRET_TOKEN=given alone", env)
	}
	// Opted in, all of it.
	all := r
	all.InheritAllEnv = true
	if env := strings.Split(do(t, startSandboxed(t, all), "env"), "\n"); !contains(env, "PLUGKIT_TEST_SECRET_TOKEN=s3cret") {
		t.Errorf("with InheritAllEnv, the plugin's environment lacks the host's PLUGKIT_TEST_SECRET_TOKEN: %q", env)
	}
}

// Socket families beyond unix, netlink and (on its own loopback) IP are
// refused: vsock reaches the hypervisor and the host's virtual machines
// through no network namespace.
func TestSandboxSocketFamilies(t *testing.T) { bothModes(t, testSandboxSocketFamilies) }

func testSandboxSocketFamilies(t *testing.T) {
	c := startSandboxed(t, sandbox.Runner{})
	for family, want := range map[string]string{
		"vsock": "operation not permitted", "alg": "operation not permitted", "packet": "operation not permitted",
		"unix": "ok", "inet": "ok", "inet6": "ok", "netlink": "ok",
	} {
		if got := do(t, c, "socket "+family); got != want {
			t.Errorf("a %s socket in the sandbox: %q; want %s", family, got, want)
		}
	}
}

// groupDirEnv names, to the rootless copy of the test binary, the
// directory of TestSandboxRootlessGroups.
const groupDirEnv = "PLUGKIT_SANDBOX_TEST_GROUP_DIR"

// testGroup is a supplementary group of the rootless host in
// TestSandboxRootlessGroups, and the group of what it guards.
const testGroup = 4242

// A rootless host whose user has a supplementary group does not pass it
// to its plugin: a file and a socket open to that group alone (a docker
// socket, say) stay out of the plugin's reach. The kernel lets only a
// privileged process drop groups, so a rootless Runner refuses to start,
// naming them and what to do.
func TestSandboxRootlessGroups(t *testing.T) {
	for _, mode := range []string{rootlessMode, landlockOnlyMode} {
		t.Run(mode, func(t *testing.T) {
			if rootless() {
				r := sandbox.Runner{}
				if mode == landlockOnlyMode {
					r = landlockOnlyRunner(t)
				}
				testSandboxRootlessGroups(t, r, os.Getenv(groupDirEnv))
				return
			}
			runRootlessWith(t, []uint32{testGroup}, groupDirEnv+"="+groupGuarded(t))
		})
	}
}

// groupGuarded makes a directory every user may search holding a file
// and a listening unix socket that only testGroup may read and connect
// to.
func groupGuarded(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "plugkit-group-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("group secret"), 0o640); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{secret, 0o640}, {filepath.Join(dir, "sock"), 0o660}} {
		if err := os.Chown(f.path, 0, testGroup); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f.path, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func testSandboxRootlessGroups(t *testing.T, r sandbox.Runner, dir string) {
	// Control: the host itself may read and connect.
	if _, err := os.ReadFile(filepath.Join(dir, "secret")); err != nil {
		t.Fatalf("control: the host, in group %d, cannot read the group's file: %v", testGroup, err)
	}
	if _, err := r.Check(); err == nil || !strings.Contains(err.Error(), "supplementary groups [4242]") || !strings.Contains(err.Error(), "Runner.KeepGroups") {
		t.Errorf("Check: %v; want an error naming the supplementary groups and Runner.KeepGroups", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := config(t, r).start(ctx)
	if err == nil {
		defer c.Close()
		if got := do(t, c, "read "+filepath.Join(dir, "secret")); !strings.Contains(got, "permission denied") {
			t.Errorf("the plugin reading a file of the host's group %d: %q; want permission denied", testGroup, got)
		}
		if got := do(t, c, "dialunix "+filepath.Join(dir, "sock")); !strings.Contains(got, "permission denied") {
			t.Errorf("the plugin connecting to a socket of the host's group %d: %q; want permission denied", testGroup, got)
		}
		return
	}
	if !strings.Contains(err.Error(), "supplementary groups [4242]") || !strings.Contains(err.Error(), "Runner.KeepGroups") {
		t.Errorf("Start: %v; want an error naming the supplementary groups and Runner.KeepGroups", err)
	}
	// Accepted, the groups are kept, as documented.
	r.KeepGroups = true
	c = startSandboxed(t, r)
	if got := do(t, c, "read "+filepath.Join(dir, "secret")); got != "group secret" {
		t.Errorf("with Runner.KeepGroups, the plugin reading a file of the host's group %d: %q; want it read", testGroup, got)
	}
}

// The plugin's cgroup is the root of its cgroup namespace: its
// /proc/self/cgroup names no cgroup of the host's.
func TestSandboxCgroupView(t *testing.T) {
	if rootless() {
		t.Fatal("the plugin has a cgroup of its own only with a root host: run the tests as root, as CI does")
	}
	c := startSandboxed(t, sandbox.Runner{Limits: sandbox.Limits{Memory: 256 << 20}})
	got := strings.TrimSpace(do(t, c, "read /proc/self/cgroup"))
	for _, l := range strings.Split(got, "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) != 3 || f[2] != "/" {
			t.Errorf("the plugin's cgroup line %q; want its cgroup at / in every hierarchy", l)
		}
	}
}
