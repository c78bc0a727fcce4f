package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
)

// TestConnectRefusesBadLines: Connect checks the handshake line and the
// version before it dials.
func TestConnectRefusesBadLines(t *testing.T) {
	ctx := context.Background()
	if _, err := host.Connect(ctx, "1|6|unix|/nonexistent/sock|grpc|", host.Options{}, host.ConnectOptions{}); err == nil || !strings.Contains(err.Error(), "Versions is empty") {
		t.Errorf("no versions: %v", err)
	}
	_, err := host.Connect(ctx, "1|6|unix|/nonexistent/sock|grpc|", host.Options{Versions: []int{5}, Security: host.Plaintext()}, host.ConnectOptions{})
	var ve *handshake.VersionError
	if !errors.As(err, &ve) {
		t.Errorf("version 6 offered to a host of 5: %v, want a *handshake.VersionError", err)
	}
	if _, err := host.Connect(ctx, "not a handshake", host.Options{Versions: []int{1}, Security: host.Plaintext()}, host.ConnectOptions{}); err == nil {
		t.Error("a malformed line was accepted")
	}
	if _, err := host.Connect(ctx, "1|1|unix|/nonexistent/sock|grpc|", host.Options{Versions: []int{1}, Security: host.Plaintext()}, host.ConnectOptions{}); err == nil {
		t.Error("connected to a socket that does not exist")
	}
}
