package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/hostwire"
)

// TestDescribeOrStart: a plugin that answers the describe request gives
// its payload and no Client; one that ignores it (and the same plugin
// under Start, which does not ask) is connected to as Start does; a
// binary that fails its pin is refused before it runs.
func TestDescribeOrStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := config(t, "describer")
	payload, c, err := describeOrStart(ctx, cfg.Command, cfg.Options)
	if err != nil || c != nil || string(payload) != "described" {
		t.Fatalf("describeOrStart of a describer: %q, %v, %v; want its payload and no Client", payload, c, err)
	}
	if c := start(t, cfg); !exists(t, c, "yes") {
		t.Error("the describer, started with Start, does not serve")
	}

	kv := config(t, "kv")
	payload, c, err = describeOrStart(ctx, kv.Command, kv.Options)
	if err != nil || c == nil || payload != nil {
		t.Fatalf("describeOrStart of a plugin that ignores the request: %q, %v, %v; want a Client", payload, c, err)
	}
	defer c.Close()
	if !exists(t, c, "yes") {
		t.Error("the plugin that ignored the request does not serve")
	}

	cfg.SHA256 = strings.Repeat("0", 64)
	_, _, err = describeOrStart(ctx, cfg.Command, cfg.Options)
	var ce *host.ChecksumError
	if !errors.As(err, &ce) {
		t.Errorf("describeOrStart of a binary that fails its pin: %v, want a ChecksumError", err)
	}
}

// describeOrStart is host's start that asks for the description only,
// reached as package describe reaches it (internal/hostwire).
func describeOrStart(ctx context.Context, cmd host.Command, opts host.Options) ([]byte, *host.Client, error) {
	return hostwire.DescribeStart.(func(context.Context, host.Command, host.Options) ([]byte, *host.Client, error))(ctx, cmd, opts)
}
