package host_test

import (
	"context"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/host"
)

// TestEveryEntryPointRefusesNoVersions: Start, Reattach, Dial and Connect
// refuse an empty Config.Versions with the same error, from the one check
// they share, before they launch or dial anything.
func TestEveryEntryPointRefusesNoVersions(t *testing.T) {
	ctx := context.Background()
	errs := map[string]error{}
	_, errs["Start"] = host.Start(ctx, host.Config{Path: "/nonexistent/plugin", Cookie: testCookie})
	_, errs["Reattach"] = host.Reattach(ctx, host.ReattachConfig{Protocol: "grpc", ProtocolVersion: 1, Addr: host.ReattachAddr{Network: "unix", String: "/nonexistent/sock"}}, host.Config{})
	_, errs["Dial"] = host.Dial(ctx, host.Remote{Endpoints: []string{"127.0.0.1:1"}}, host.Config{})
	_, errs["Connect"] = host.Connect(ctx, "1|1|unix|/nonexistent/sock|grpc|", nil, host.Config{})
	var want string
	for name, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "Config.Versions is empty") {
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
