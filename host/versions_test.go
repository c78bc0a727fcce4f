package host_test

import (
	"context"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
)

// TestEveryEntryPointRefusesNoVersions: Start, Reattach, Dial and Connect
// refuse an empty Options.Versions with the same error, from the one check
// they share, before they launch or dial anything.
func TestEveryEntryPointRefusesNoVersions(t *testing.T) {
	ctx := context.Background()
	errs := map[string]error{}
	_, errs["Start"] = host.Start(ctx, host.Command{Path: "/nonexistent/plugin", Cookie: testCookie}, host.Options{})
	_, errs["Reattach"] = host.Reattach(ctx, handshake.Reattach{Protocol: "grpc", ProtocolVersion: 1, Addr: handshake.ReattachAddr{Network: "unix", String: "/nonexistent/sock"}}, host.Options{}, host.ReattachOptions{})
	_, errs["Dial"] = host.Dial(ctx, host.Remote{Endpoints: []string{"127.0.0.1:1"}}, host.Options{})
	_, errs["Connect"] = host.Connect(ctx, "1|1|unix|/nonexistent/sock|grpc|", host.Options{}, host.ConnectOptions{})
	var want string
	for name, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "Options.Versions is empty") {
			t.Errorf("%s with no versions: %v, want the empty-Versions error", name, err)
			continue
		}
		if want == "" {
			want = err.Error()
		} else if err.Error() != want {
			t.Errorf("%s: %q, want the same error as the other entry points: %q", name, err, want)
		}
	}
}
