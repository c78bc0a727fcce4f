package wasmhost_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/hostwire"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestDescribeOrStartGuest: a guest that answers the describe request
// gives its payload and no Client, and has ended; one that ignores it is
// connected to on the same start and serves; one that writes its
// description and stays, or exits non-zero, is stopped and refused.
func TestDescribeOrStartGuest(t *testing.T) {
	rt := sharedRuntime()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := host.Options{Versions: []int{1, 2}, Logger: testutil.Logger(t)}

	cmd := command(t, rt)
	cmd.Env = []string{"PLUGKIT_GUEST_DESCRIBE=exit"}
	payload, c, err := describeOrStart(ctx, cmd, opts)
	if err != nil || c != nil || string(payload) != "described" {
		t.Fatalf("describeOrStart of a describing guest: %q, %v, %v; want its payload and no Client", payload, c, err)
	}
	waitEnded(t, rt)

	payload, c, err = describeOrStart(ctx, command(t, rt), opts)
	if err != nil || c == nil || payload != nil {
		t.Fatalf("describeOrStart of a guest that ignores the request: %q, %v, %v; want a Client", payload, c, err)
	}
	if err := exists(c, "yes"); err != nil {
		t.Errorf("the guest that ignored the request does not serve: %v", err)
	}
	c.Close()

	cmd.Env = []string{"PLUGKIT_GUEST_DESCRIBE=stay"}
	cmd.Timeouts.Stop = 200 * time.Millisecond
	_, c, err = describeOrStart(ctx, cmd, opts)
	if err == nil || c != nil || !strings.Contains(err.Error(), "did not exit") {
		t.Errorf("describeOrStart of a guest that stays after its description: %v, %v; want an error saying it did not exit", c, err)
	}
	waitEnded(t, rt) // it sleeps for an hour: stopped, its sleep ends at once

	cmd.Env = []string{"PLUGKIT_GUEST_DESCRIBE=fail"}
	_, c, err = describeOrStart(ctx, cmd, opts)
	var exit *host.ExitError
	if !errors.As(err, &exit) || c != nil || !strings.Contains(err.Error(), "3") {
		t.Errorf("describeOrStart of a guest that exits 3 after its description: %v, %v; want an ExitError", c, err)
	}
	waitEnded(t, rt)
}

// describeOrStart is host's start that asks for the description only,
// reached as package describe reaches it (internal/hostwire).
func describeOrStart(ctx context.Context, cmd host.Command, opts host.Options) ([]byte, *host.Client, error) {
	return hostwire.DescribeStart.(func(context.Context, host.Command, host.Options) ([]byte, *host.Client, error))(ctx, cmd, opts)
}
