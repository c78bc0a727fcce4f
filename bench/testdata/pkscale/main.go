// Command pkscale is the plugkit host of the scale benchmark: it starts N
// copies of the plugkit echo plugin named by its first argument with
// host.Start (AutoMTLS on), INFLIGHT starts at a time, makes one call to
// each, and closes them all at once; it prints the figures of
// bench/internal/scale.Result.
package main

import (
	"context"
	"log/slog"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/bench/internal/scale"
	"github.com/plugkit/plugkit/host"
)

func main() {
	opts := host.Options{Versions: []int{1}, Logger: slog.New(slog.DiscardHandler)}
	scale.Main(func(ctx context.Context, plugin string) (func(), error) {
		c, err := host.Start(ctx, host.Command{Path: plugin, Cookie: echo.Cookie}, opts)
		if err != nil {
			return nil, err
		}
		if _, err := echo.Echo(ctx, c.Conn(), []byte("hello")); err != nil {
			c.Close()
			return nil, err
		}
		return func() { c.Close() }, nil
	})
}
