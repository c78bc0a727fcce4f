package tracewire

import (
	"testing"

	"google.golang.org/grpc/stats"
)

// TestTraceable: the go-plugin plumbing is not traced, a kind's calls are.
func TestTraceable(t *testing.T) {
	for method, want := range map[string]bool{
		"/plugin.GRPCBroker/StartStream":       false,
		"/plugin.GRPCStdio/StreamStdio":        false,
		"/plugin.GRPCController/Shutdown":      false,
		"/kv.v2.KV/Get":                        true,
		"/plugkit.catalog.v1.Catalog/Describe": true,
	} {
		if got := Traceable(&stats.RPCTagInfo{FullMethodName: method}); got != want {
			t.Errorf("Traceable(%s) = %v, want %v", method, got, want)
		}
	}
}
