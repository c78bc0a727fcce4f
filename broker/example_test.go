package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/broker"
	greeterv1 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/plugintest"
)

// greeter is a plugin's service that calls back into its host: the host
// names, in the request, the broker ID of a service it serves, and the
// plugin dials it.
type greeter struct {
	greeterv1.UnimplementedGreeterServer
	broker *broker.Broker
}

func (g greeter) Greet(ctx context.Context, req *greeterv1.GreetRequest) (*greeterv1.GreetResponse, error) {
	id, err := strconv.ParseUint(req.GetName(), 10, 32)
	if err != nil {
		return nil, err
	}
	conn, err := g.broker.Dial(ctx, uint32(id))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "callback"})
	if err != nil {
		return nil, err
	}
	return &greeterv1.GreetResponse{Message: "the host's callback is " + resp.GetStatus().String()}, nil
}

// A callback: the host serves a service on a new broker ID, sends the ID
// to the plugin in an ordinary call (here, for want of a protocol with a
// field for it, in the greeter's name), and the plugin dials it. The
// plugin gets its broker in its plugin.Register, the host from
// Client.Broker; plugintest serves the plugin in this process.
func Example() {
	cfg := plugin.Config{Versions: map[int]plugin.Register{
		1: func(s *grpc.Server, b *broker.Broker) error {
			greeterv1.RegisterGreeterServer(s, greeter{broker: b})
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
	defer stop()

	// The host's side: serve the callback, then tell the plugin its ID.
	b := client.Broker()
	id := b.NextID()
	err = b.Serve(ctx, id, func(s *grpc.Server) {
		h := health.NewServer()
		h.SetServingStatus("callback", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(s, h)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := greeterv1.NewGreeterClient(client.Conn()).Greet(ctx, &greeterv1.GreetRequest{Name: strconv.FormatUint(uint64(id), 10)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.GetMessage())
	// Output: the host's callback is SERVING
}
