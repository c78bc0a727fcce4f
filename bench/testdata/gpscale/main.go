// Command gpscale is pkscale with go-plugin v1.8.0 as the host library
// (AutoMTLS on, Kill to close, as go-plugin's hosts end their plugins) and
// gpplugin as the plugin.
package main

import (
	"context"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/bench/internal/gpecho"
	"github.com/plugkit/plugkit/bench/internal/scale"
)

func main() {
	scale.Main(func(ctx context.Context, plugin string) (func(), error) {
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
}
