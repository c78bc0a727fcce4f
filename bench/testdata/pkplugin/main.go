// Command pkplugin is the plugkit contender of the benchmarks: the echo
// service served by plugin.Serve as app protocol version 1; with
// BENCH_TRACE=1 it traces every call (echo.TracerProvider).
package main

import (
	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/plugin"
)

func main() {
	plugin.Serve(plugin.Config{
		Cookie:         echo.Cookie,
		TracerProvider: echo.TracerProvider(),
		Versions: map[int]plugin.Register{1: func(s *grpc.Server, _ *broker.Broker) error {
			echo.Register(s)
			return nil
		}},
	})
}
