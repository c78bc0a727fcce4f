package broker

import (
	"fmt"
	"os"
	"testing"
)

// BenchmarkBrokeredDialAndCall measures what a callback costs: Dial of a
// brokered service and one call on the new connection, with a socket per
// connection (sockets) and multiplexed over the plugin's one connection
// (mux). Compare the two in the same run:
//
//	go test -run '^$' -bench BrokeredDialAndCall ./broker/
func BenchmarkBrokeredDialAndCall(b *testing.B) {
	for _, mux := range []bool{false, true} {
		name := "sockets"
		if mux {
			name = "mux"
		}
		b.Run(name, func(b *testing.B) {
			dir, err := os.MkdirTemp("", "pkbench")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.RemoveAll(dir) })
			plugin, host := brokerPair(b, dir, mux)
			for i := 0; b.Loop(); i++ {
				id := uint32(i + 1)
				serveHealth(b, plugin, id, "svc")
				if err := checkHealth(b, host, id, "svc"); err != nil {
					b.Fatal(fmt.Sprint(id, err))
				}
			}
		})
	}
}
