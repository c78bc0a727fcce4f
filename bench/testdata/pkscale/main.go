// Command pkscale is the plugkit host of the scale benchmark: it starts N
// copies of the plugkit echo plugin named by its first argument with
// host.Start (AutoMTLS on), INFLIGHT starts at a time, makes one call to
// each, and closes them all at once; it prints the figures of
// bench/internal/scale.Result.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/bench/internal/scale"
	"github.com/plugkit/plugkit/host"
)

func main() {
	plugin, n, inflight, err := scale.Args(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := host.Options{Versions: []int{1}, Logger: slog.New(slog.DiscardHandler)}
	r, err := scale.Run(ctx, n, inflight, func(ctx context.Context) (func(), error) {
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
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(r)
}
