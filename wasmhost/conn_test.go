package wasmhost_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/wasmhost"
)

// TestStopWakesWaitingGuest: a guest that has written its handshake and
// waits for input in poll_oneoff ends as soon as Stop is called, with
// Stop's cause: the host's code it waits in is where a cancelled context
// does not reach, so Stop must close its connection.
func TestStopWakesWaitingGuest(t *testing.T) {
	rt := sharedRuntime()
	waitEnded(t, rt) // Polls counts every guest of rt's
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	defer outW.Close()
	env := handshake.Env{Cookie: testCookie, Versions: []int{1}, Multiplex: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := rt.StartGuest(ctx, host.GuestSpec{Path: guestModule(t), Env: env.Environ(), Stdout: outW, Stderr: outW})
	if err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(outR).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if _, err := handshake.Parse(strings.TrimSpace(s)); err != nil {
			t.Fatalf("the guest's first line %q: %v", s, err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no handshake line")
	}
	waitPolling(t, rt)
	cause := errors.New("stopped by the test")
	g.Stop(cause)
	select {
	case <-g.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the guest waiting for input did not end after Stop")
	}
	if err := g.Err(); !errors.Is(err, cause) {
		t.Errorf("Err: %v; want Stop's cause", err)
	}
}

// waitPolling waits until a guest of rt waits for input.
func waitPolling(t *testing.T, rt *wasmhost.Runtime) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for wasmhost.Polls(rt) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the guest never waited for input")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGuestIdlesWithoutSpinning: a connected guest that has nothing to do
// waits for input in poll_oneoff and does not come back to poll again and
// again (a busy loop: thousands of waits a second, a core of CPU).
func TestGuestIdlesWithoutSpinning(t *testing.T) {
	rt := sharedRuntime()
	waitEnded(t, rt) // Polls counts every guest of rt's
	c := startGuest(t, command(t, rt))
	if err := exists(c, "yes"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the call's own work settles
	before := wasmhost.Polls(rt)
	time.Sleep(time.Second)
	// Idle, the guest's Go runtime waits for its next timer or for
	// input; a few waits a second at most (its timers are seconds
	// apart), and each wait shorter than 1 ms is a 0 ms poll.
	n := wasmhost.Polls(rt) - before
	t.Logf("%d polls", n)
	if n > 100 {
		t.Errorf("the idle guest waited for input %d times in a second; want it to sleep in its waits", n)
	}
}

// TestUnaryCallWakesGuestTwice: a unary call wakes the guest for its
// input twice (the request; the host's acknowledgement of the answer),
// not three times: host and guest fix their flow-control windows, so
// grpc-go's bandwidth estimation sends no PING after each answer for
// the guest to read and acknowledge.
func TestUnaryCallWakesGuestTwice(t *testing.T) {
	rt := sharedRuntime()
	waitEnded(t, rt) // Polls counts every guest of rt's
	c := startGuest(t, command(t, rt))
	for range 20 { // the connection's first calls settle
		if err := exists(c, "yes"); err != nil {
			t.Fatal(err)
		}
	}
	const calls = 100
	before := wasmhost.Polls(rt)
	for range calls {
		if err := exists(c, "yes"); err != nil {
			t.Fatal(err)
		}
	}
	perCall := float64(wasmhost.Polls(rt)-before) / calls
	t.Logf("%.2f waits for input a call", perCall)
	if perCall > 2.3 {
		t.Errorf("the guest waited for input %.2f times a call; want at most 2.3 (a PING to answer after each call?)", perCall)
	}
}

// TestGuestWithoutPlugkitHost: a plugkit guest run by a runtime that gives
// it no connection (wazero with nothing but the module's configuration:
// no connection, no grants) exits saying to load it with plugkit's host.
// The guest is the one the shared Runtime compiled already.
func TestGuestWithoutPlugkitHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr testutil.Buffer
	env := handshake.Env{Cookie: testCookie, Versions: []int{1}, Multiplex: true}
	mc := wazero.NewModuleConfig().WithStderr(&stderr).WithStdout(&stderr).WithArgs("guest.wasm")
	for _, kv := range env.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		mc = mc.WithEnv(k, v)
	}
	if err := wasmhost.InstantiatePlain(ctx, sharedRuntime(), guestModule(t), mc); err == nil {
		t.Fatal("the guest ran without a connection; want it to exit with an error")
	}
	if out := stderr.String(); !strings.Contains(out, "load it with plugkit's host.Start") {
		t.Errorf("the guest's standard error: %q; want it to say how to load it", out)
	}
}
