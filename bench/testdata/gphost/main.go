// Command gphost is pkhost with go-plugin v1.8.0 as the host library
// (AutoMTLS on) and gpplugin as the plugin: it prints "HOST_KIB
// PLUGIN_KIB" after one call and an idle pause.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/bench/internal/rss"
)

type echoPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (echoPlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return nil }

func (echoPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

func main() {
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: echo.Cookie.Key, MagicCookieValue: echo.Cookie.Value},
		Plugins:          goplugin.PluginSet{echo.PluginName: echoPlugin{}},
		Cmd:              exec.Command(os.Args[1]),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           hclog.NewNullLogger(),
	})
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
