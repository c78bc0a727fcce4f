// Command pkplugin is the plugkit contender of the benchmarks: the echo
// service served by plugin.Serve as app protocol version 1.
package main

import (
	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/plugin"
)

func main() {
	plugin.Serve(plugin.Config{
		Cookie: echo.Cookie,
		Versions: map[int]plugin.Register{1: func(s *grpc.Server, _ *broker.Broker) error {
			echo.Register(s)
			return nil
		}},
	})
}
