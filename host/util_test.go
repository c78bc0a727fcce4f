package host_test

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/plugkit/plugkit/host"
)

// trustTCP is ReattachOptions.TrustTCPListener for this package's
// reattaches. Only Linux can check who listens on a TCP reattach's
// address (/proc); elsewhere (Windows, where Wine has no AF_UNIX and every
// reattach is TCP, and macOS) the host refuses a TCP reattach unless told
// to trust it, so the tests opt in there as a user must. On Linux they
// keep running the check.
const trustTCP = runtime.GOOS != "linux"

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// launchConfig is what a test gives Start: the command and the options,
// each field reachable as cfg.Field.
type launchConfig struct {
	host.Command
	host.Options
}

// security is the Security of a test that turns AutoMTLS off or not.
func security(plaintext bool) host.Security {
	if plaintext {
		return host.Plaintext()
	}
	return host.Security{}
}
