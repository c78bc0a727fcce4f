//go:build unix

package plugintest_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/broker"
	greeterv1 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/plugintest"
)

// Run serves a plugin's Config in this process, through plugin.Run and a
// real handshake, socket and AutoMTLS, and hands back the connected host
// client; in a test, plugintest.Start(t, cfg, plugintest.Options{}) does
// the same and stops it in t.Cleanup.
func ExampleRun() {
	cfg := plugin.Config{Versions: map[int]plugin.Register{
		1: func(s *grpc.Server, _ *broker.Broker) error {
			greeterv1.RegisterGreeterServer(s, hello{})
			return nil
		},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, stop, err := plugintest.Run(ctx, cfg, plugintest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := greeterv1.NewGreeterClient(client.Conn()).Greet(ctx, &greeterv1.GreetRequest{Name: "Ada"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.GetMessage(), "over", client.ReattachConfig().Addr.Network, "with TLS:", client.TLS())
	fmt.Println("stopped:", stop())
	// Output:
	// Hello, Ada! over unix with TLS: true
	// stopped: <nil>
}
