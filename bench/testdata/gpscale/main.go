// Command gpscale is pkscale with go-plugin v1.8.0 as the host library
// (AutoMTLS on, Kill to close, as go-plugin's hosts end their plugins) and
// gpplugin as the plugin.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/bench/internal/gpecho"
	"github.com/plugkit/plugkit/bench/internal/scale"
)

func main() {
	plugin, n, inflight, err := scale.Args(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := scale.Run(ctx, n, inflight, func(ctx context.Context) (func(), error) {
		client := gpecho.NewClient(plugin)
		rpc, err := client.Client()
		if err != nil {
			client.Kill()
			return nil, err
		}
		raw, err := rpc.Dispense(echo.PluginName)
		if err != nil {
			client.Kill()
			return nil, err
		}
		if _, err := echo.Echo(ctx, raw.(*grpc.ClientConn), []byte("hello")); err != nil {
			client.Kill()
			return nil, err
		}
		return client.Kill, nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(r)
}
