package sandbox_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/sandbox"
)

// The sandbox's two modes: made by a root host, or, for any other user,
// in an unprivileged user namespace. CI runs as root; the rootless mode
// is tested by re-executing this test binary as an unprivileged user
// (rootlessUID), which then runs the host side of the same test.
const (
	rootMode     = "root"
	rootlessMode = "rootless"
	rootlessUID  = sandbox.Nobody
)

// allModes runs test as a subtest in each mode with the Runner of that
// mode: bothModes, and LandlockOnly in the rootless copy of this test
// binary, with user namespaces off (userNamespacesOff).
func allModes(t *testing.T, test func(t *testing.T, r sandbox.Runner)) {
	bothModes(t, func(t *testing.T) { test(t, sandbox.Runner{}) })
	t.Run(landlockOnlyMode, func(t *testing.T) {
		if !rootless() {
			runRootless(t)
			return
		}
		test(t, landlockOnlyRunner(t))
	})
}

// landlockOnlyRunner turns user namespaces off for this test (in the
// sandbox's view of the sysctls) and returns a Runner that accepts
// Landlock alone.
func landlockOnlyRunner(t *testing.T) sandbox.Runner {
	t.Helper()
	dir, err := userNamespacesOff()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := sandbox.WithSysctlDir(sandbox.Runner{Minimum: sandbox.LandlockOnly}, dir)
	// KeepGroups: the level alone, whatever the host's groups (those of
	// TestSandboxRootlessGroups are refused).
	keep := r
	keep.KeepGroups = true
	if got, err := keep.Check(); err != nil || got != sandbox.LandlockOnly {
		t.Fatalf("Check: %v, %v; want LandlockOnly", got, err)
	}
	return r
}

// userNamespacesOff makes a directory of sysctls (for sandbox.WithSysctlDir)
// in which unprivileged user namespaces are off.
func userNamespacesOff() (string, error) {
	dir, err := os.MkdirTemp("", "plugkit-sysctl-")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, "user"), 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "user", "max_user_namespaces"), []byte("0\n"), 0o644)
}

// rootless reports whether this process runs the host side of the
// rootless mode (it is not root).
func rootless() bool { return os.Geteuid() != 0 }

// bothModes runs test as a subtest in each mode: "root" in this process
// (root), "rootless" in a copy of this test binary run as rootlessUID.
func bothModes(t *testing.T, test func(t *testing.T)) {
	t.Run(rootMode, func(t *testing.T) {
		if rootless() {
			t.Fatal("the root mode needs a host running as root: run the tests as root, as CI does")
		}
		test(t)
	})
	t.Run(rootlessMode, func(t *testing.T) {
		if rootless() {
			test(t)
			return
		}
		runRootless(t)
	})
}

var (
	rootlessOnce sync.Once
	rootlessExe  string // this test binary, copied where rootlessUID may execute it
	rootlessErr  error
)

// rootlessBinary copies this test binary into a directory every user may
// search: go test builds it in a directory only root may enter.
func rootlessBinary() (string, error) {
	rootlessOnce.Do(func() {
		var dir string
		dir, rootlessErr = os.MkdirTemp("", "plugkit-rootless-")
		if rootlessErr != nil {
			return
		}
		cleanups = append(cleanups, func() { os.RemoveAll(dir) })
		if rootlessErr = os.Chmod(dir, 0o755); rootlessErr != nil {
			return
		}
		var self string
		if self, rootlessErr = os.Executable(); rootlessErr != nil {
			return
		}
		rootlessExe = filepath.Join(dir, filepath.Base(self))
		rootlessErr = copyFile(self, rootlessExe, 0o755)
	})
	return rootlessExe, rootlessErr
}

// cleanups run when the tests end (TestMain).
var cleanups []func()

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// runRootless runs the test t names (a "rootless" subtest) in a copy of
// this binary as rootlessUID, and fails t with its output if it fails.
func runRootless(t *testing.T) {
	t.Helper()
	runRootlessWith(t, nil)
}

// runRootlessWith is runRootless with the supplementary groups given
// and the variables env added to the environment.
func runRootlessWith(t *testing.T, groups []uint32, env ...string) {
	t.Helper()
	exe, err := rootlessBinary()
	if err != nil {
		t.Fatalf("copying the test binary for the rootless mode: %v", err)
	}
	var parts []string
	for _, p := range strings.Split(t.Name(), "/") {
		parts = append(parts, "^"+regexp.QuoteMeta(p)+"$")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v", "-test.timeout=55s")
	cmd.Dir = filepath.Dir(exe)
	cmd.Env = append(append(os.Environ(), "HOME=/", "GORACE=atexit_sleep_ms=0"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: rootlessUID, Gid: rootlessUID, Groups: groups}}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Fatalf("as uid %d (rootless): %v\n%s", rootlessUID, err, out)
	case err != nil:
		t.Fatalf("running the test as uid %d: %v", rootlessUID, err)
	case !strings.Contains(string(out), "--- PASS: "+t.Name()):
		t.Fatalf("as uid %d (rootless), the test did not run:\n%s", rootlessUID, out)
	}
}
