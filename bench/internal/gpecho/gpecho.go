package gpecho

import (
	"context"
	"os/exec"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/bench/internal/echo"
)

// plugin dispenses the plugin's gRPC connection itself: the hosts make
// their own stubs on it.
type plugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (plugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return nil }

func (plugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

// NewClient returns a go-plugin client for the echo plugin at path, over
// gRPC with AutoMTLS, as go-plugin's users start theirs. Dispensing
// echo.PluginName gives its *grpc.ClientConn.
func NewClient(path string) *goplugin.Client {
	return goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: echo.Cookie.Key, MagicCookieValue: echo.Cookie.Value},
		Plugins:          goplugin.PluginSet{echo.PluginName: plugin{}},
		Cmd:              exec.Command(path),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           hclog.NewNullLogger(),
	})
}
