// Command gpplugin is the go-plugin v1.8.0 contender of the benchmarks:
// the echo service served by go-plugin's Serve.
package main

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/bench/internal/echo"
)

type echoPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (echoPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	echo.Register(s)
	return nil
}

func (echoPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

func main() {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: echo.Cookie.Key, MagicCookieValue: echo.Cookie.Value},
		Plugins:         goplugin.PluginSet{echo.PluginName: echoPlugin{}},
		GRPCServer:      goplugin.DefaultGRPCServer,
	})
}
