package interop_test

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/internal/testutil"
)

// modeEnv, when set, makes the test binary one of the programs in
// children_test.go instead of running tests.
const modeEnv = "PLUGKIT_INTEROP_MODE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		runChild(mode)
		os.Exit(0)
	}
	goleak.VerifyTestMain(testutil.Tidy(m),
		goleak.IgnoreTopFunction("github.com/plugkit/plugkit/host.spawner"), // the thread every plugin is forked from
		// go-plugin's own: a go-plugin host's broker keeps each knock
		// answer's waiter for 5 s after the dial it answered succeeded
		// (GRPCBroker.Run starts it, nothing ends it early), so a test
		// that ends sooner sees it; it ends by itself.
		goleak.IgnoreTopFunction("github.com/hashicorp/go-plugin.(*GRPCBroker).timeoutWait"),
	)
}

// childEnv is the environment a re-exec'd child gets on top of its
// parent's: its mode, and GORACE so that a race-enabled child does not
// sleep 1 s at exit.
func childEnv(mode string) []string {
	return []string{modeEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}
}

// self is the test binary, which every child runs.
func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// waitFor polls cond every 10 ms until it holds or d has passed, and
// reports whether it held.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitContains waits up to 10 s for b to contain s n times.
func waitContains(b *syncBuffer, s string, n int) bool {
	return waitFor(10*time.Second, func() bool { return strings.Count(b.String(), s) >= n })
}

// syncBuffer is a goroutine-safe log destination.
type syncBuffer = testutil.Buffer

// defaultNetwork is the network plugins listen on unless told otherwise:
// unix sockets, but loopback TCP on Windows.
func defaultNetwork() string {
	if osdep.UnixSockets {
		return "unix"
	}
	return "tcp"
}

// resolveAddr is a reattach configuration's address as go-plugin's
// ReattachConfig takes it: a unix socket, or TCP on Windows.
func resolveAddr(network, address string) (net.Addr, error) {
	if network == "tcp" {
		return net.ResolveTCPAddr(network, address)
	}
	return net.ResolveUnixAddr(network, address)
}
