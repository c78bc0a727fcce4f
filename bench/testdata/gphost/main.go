// Command gphost is pkhost with go-plugin v1.8.0 as the host library
// (AutoMTLS on) and gpplugin as the plugin: it prints "HOST_KIB
// PLUGIN_KIB" after one call and an idle pause.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/bench/internal/gpecho"
	"github.com/plugkit/plugkit/bench/internal/rss"
)

func main() {
	client := gpecho.NewClient(os.Args[1])
	defer client.Kill()
	rpc, err := client.Client()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	raw, err := rpc.Dispense(echo.PluginName)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := echo.Echo(ctx, raw.(*grpc.ClientConn), []byte("hello")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	time.Sleep(rss.Idle)
	fmt.Println(rss.Of(os.Getpid()), rss.Of(client.ReattachConfig().Pid))
}
