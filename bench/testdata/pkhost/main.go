// Command pkhost measures memory: it starts the plugkit plugin named by
// its argument with host.Start (AutoMTLS on), makes one call, lets both
// sides idle, and prints "HOST_KIB PLUGIN_KIB", the resident set sizes of
// itself and of the plugin.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/bench/internal/rss"
	"github.com/plugkit/plugkit/host"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := host.Start(ctx, host.Command{Path: os.Args[1], Cookie: echo.Cookie}, host.Options{Versions: []int{1}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	if _, err := echo.Echo(ctx, c.Conn(), []byte("hello")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	time.Sleep(rss.Idle)
	fmt.Println(rss.Of(os.Getpid()), rss.Of(c.Pid()))
}
