package host_test

import (
	"encoding/json"
	"testing"

	"github.com/plugkit/plugkit/host"
)

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
