package handshake

import "testing"

// TestEnvMultiplexValue: only a true value of PLUGIN_MULTIPLEX_GRPC asks
// for multiplexing (go-plugin hosts send "true").
func TestEnvMultiplexValue(t *testing.T) {
	cookie := Cookie{Key: "K", Value: "v"}
	for value, want := range map[string]bool{"true": true, "1": true, "TRUE": true, "false": false, "0": false, "": false, "maybe": false} {
		env := map[string]string{"K": "v", EnvMultiplexGRPC: value}
		e, err := ReadEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, cookie)
		if err != nil {
			t.Fatal(err)
		}
		if e.Multiplex != want {
			t.Errorf("%s=%q: Multiplex %v, want %v", EnvMultiplexGRPC, value, e.Multiplex, want)
		}
	}
}
