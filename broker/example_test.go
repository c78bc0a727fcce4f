package broker_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// A plugin and its host in one program, multiplexed over one unix socket:
// the plugin serves a brokered service and the host calls it, with no
// socket made for it. plugin.Run and host.Start do the same when the host
// sets host.Command.MultiplexBroker.
func ExampleListenMux() {
	dir, _ := os.MkdirTemp("", "mux")
	defer os.RemoveAll(dir)
	ln, err := net.Listen("unix", dir+"/plugin.sock")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The plugin: its main gRPC server serves on the Mux's main listener.
	pmux := broker.ListenMux(ln)
	defer pmux.Close()
	pluginBroker := broker.New(broker.Options{Mux: pmux})
	defer pluginBroker.Close()
	srv := grpc.NewServer()
	pluginpb.RegisterGRPCBrokerServer(srv, broker.ServerHandler{Broker: pluginBroker})
	go srv.Serve(pmux.Main())
	defer srv.Stop()

	// The host: one connection, every gRPC connection a stream in it.
	raw, err := net.Dial("unix", dir+"/plugin.sock")
	if err != nil {
		fmt.Println(err)
		return
	}
	hmux, _ := broker.DialMux(raw)
	defer hmux.Close()
	conn, _ := grpc.NewClient("passthrough:///plugin",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return hmux.Open() }))
	defer conn.Close()
	hostBroker := broker.New(broker.Options{Mux: hmux})
	defer hostBroker.Close()
	stream, err := pluginpb.NewGRPCBrokerClient(conn).StartStream(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	go hostBroker.Run(stream)

	// The plugin serves service 1; the host dials it.
	pluginBroker.Serve(ctx, 1, func(s *grpc.Server) {
		h := health.NewServer()
		h.SetServingStatus("callback", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(s, h)
	})
	cb, err := hostBroker.Dial(ctx, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cb.Close()
	resp, err := healthpb.NewHealthClient(cb).Check(ctx, &healthpb.HealthCheckRequest{Service: "callback"})
	if err != nil {
		fmt.Println(err)
		return
	}
	entries, _ := os.ReadDir(dir)
	fmt.Println(resp.GetStatus(), "sockets left:", len(entries))
	// Output: SERVING sockets left: 0
}
