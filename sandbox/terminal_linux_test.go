package sandbox_test

// Issue 36, point 1: a sandboxed plugin must not reach the terminal of the
// shell that ran its host. The test makes a pty, runs a host (this test
// binary) with it as its controlling terminal and standard input, as a
// shell runs a command, and has the host's sandboxed probe try to type
// into it and take its foreground.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/sandbox"
)

// ttyHostEnv makes the test binary a host, in the mode it names, that
// starts one sandboxed probe, has it attack the host's terminal, prints
// its answer and exits.
const ttyHostEnv = "PLUGKIT_SANDBOX_TEST_TTY_HOST"

// landlockOnlyMode is the mode of a rootless host where user namespaces
// are off (Runner.Minimum LandlockOnly).
const landlockOnlyMode = "landlockonly"

// In each mode, the plugin leads a session of its own, without the
// host's terminal: it cannot open /dev/tty, its view has none, and the
// seccomp filter refuses the ioctls that type into a terminal or take its
// foreground whatever terminal it could reach. Nothing reaches the
// terminal's input, nor its master side.
func TestSandboxHostTerminal(t *testing.T) {
	for _, mode := range []string{rootMode, rootlessMode, landlockOnlyMode} {
		t.Run(mode, func(t *testing.T) { testSandboxHostTerminal(t, mode) })
	}
}

func testSandboxHostTerminal(t *testing.T, mode string) {
	if rootless() {
		t.Fatal("the test runs its hosts as root and as uid 65534: run it as root, as CI does")
	}
	requireSandbox(t)
	master, tty := testutil.OpenPTY(t)
	path := tty.Name()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	attr := &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if mode != rootMode {
		// The user owns the terminal it logged in on.
		if err := tty.Chown(rootlessUID, -1); err != nil {
			t.Fatal(err)
		}
		if exe, err = rootlessBinary(); err != nil {
			t.Fatal(err)
		}
		attr.Credential = &syscall.Credential{Uid: rootlessUID, Gid: rootlessUID}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), ttyHostEnv+"="+mode, "HOME=/", "GORACE=atexit_sleep_ms=0")
	cmd.Dir = filepath.Dir(exe)
	cmd.Stdin = tty
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = attr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the %s host on %s: %v\n%s%s", mode, path, err, stdout.String(), stderr.String())
	}
	answers := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		what, res, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("the host's line %q", l)
		}
		answers[what] = res
	}
	t.Logf("the plugin's attempts:\n%s", stdout.String())
	for what, res := range answers {
		switch {
		case what == "sid":
			if res != "ok" {
				t.Errorf("the plugin's session: %s; want a session of its own", res)
			}
		case strings.HasSuffix(what, " stdin"):
			if res != "operation not permitted" {
				t.Errorf("%s: %s; want operation not permitted (the seccomp filter)", what, res)
			}
		case res == "ok":
			t.Errorf("%s: ok; want it refused", what)
		}
	}
	for _, want := range []string{"open /dev/tty", "open " + path, "sid", "TIOCSTI stdin"} {
		if _, ok := answers[want]; !ok {
			t.Errorf("the plugin did not try %q", want)
		}
	}
	if mode == landlockOnlyMode {
		// The plugin sees the host's processes: their standard input too.
		found := false
		for what := range answers {
			found = found || strings.HasPrefix(what, "open /proc/")
		}
		if !found {
			t.Error("the plugin in LandlockOnly mode did not try its host's standard input")
		}
	}
	// What TIOCSTI pushed would wait in the terminal's input for the
	// shell, and its echo on the master side for the terminal emulator.
	for _, side := range []struct {
		name string
		f    *os.File
	}{{"the terminal's input", tty}, {"the master side", master}} {
		n, err := unix.IoctlGetInt(int(side.f.Fd()), unix.TIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			buf := make([]byte, n)
			side.f.Read(buf)
			t.Errorf("%s holds %d bytes from the plugin: %q", side.name, n, buf)
		}
	}
}

// runTTYHost is the host of TestSandboxHostTerminal: it starts the probe
// in the sandbox of the mode ttyHostEnv names, asks it to attack its
// standard input's terminal, prints the answer and exits (status 1 on
// an error, which it prints).
func runTTYHost() {
	if err := ttyHost(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ttyHost is runTTYHost but for the exit, which would skip its deferred
// removal of the sysctl directory (it had left one in the temporary
// directory on every run).
func ttyHost() error {
	mode := os.Getenv(ttyHostEnv)
	r := sandbox.Runner{}
	if mode == landlockOnlyMode {
		dir, err := userNamespacesOff()
		defer os.RemoveAll(dir)
		if err != nil {
			return err
		}
		r = sandbox.WithSysctlDir(sandbox.Runner{Minimum: sandbox.LandlockOnly}, dir)
		if got, err := r.Check(); err != nil || got != sandbox.LandlockOnly {
			return fmt.Errorf("Check: %v, %v; want LandlockOnly", got, err)
		}
	}
	pts, err := os.Readlink("/proc/self/fd/0")
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := host.Start(ctx, host.Command{
		Path:   exe,
		Env:    []string{probeEnv + "=1", "GORACE=atexit_sleep_ms=0"},
		Cookie: testCookie,
		Runner: r,
	}, host.Options{Versions: []int{1}})
	if err != nil {
		return err
	}
	out := new(wrapperspb.StringValue)
	err = c.Conn().Invoke(ctx, probeMethod, wrapperspb.String("tty "+pts), out)
	c.Close()
	if err != nil {
		return err
	}
	fmt.Println(out.GetValue())
	return nil
}
