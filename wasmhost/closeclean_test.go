package wasmhost_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestCloseEndsGuestByItsOwnStop: Close asks the guest to stop (the
// Shutdown RPC), and the guest ends by itself, well before its stop
// timeout. Before, a guest's gRPC reader spun in yamux's Stream.Read once
// the host hung up (the session's shutdown wakes a waiting Read, which
// goes round its loop until the session has closed the stream; a guest's
// one thread never got there), so that every Close waited out the stop
// timeout (2 s) and then stopped the guest, with a warning.
func TestCloseEndsGuestByItsOwnStop(t *testing.T) {
	rt := sharedRuntime()
	cmd := command(t, rt)
	cmd.Timeouts.Stop = time.Minute // long enough that a guest not ending by itself cannot pass unseen
	for i := range 3 {
		var logs testutil.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		c, err := host.Start(ctx, cmd, host.Options{Versions: []int{1, 2}, Logger: logger})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		exists(c, "k") // a call, so that the session has carried one; its answer does not matter here
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("close %d: %v", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("close %d: the guest did not end within 30 s of Close asking it to stop (its stop timeout is a minute)", i)
		}
		if s := logs.String(); s != "" {
			t.Fatalf("close %d logged:\n%s", i, s)
		}
	}
}
