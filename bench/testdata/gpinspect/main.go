// Command gpinspect does with go-plugin v1.8.0 what `plugkit inspect
// PLUGIN --cookie ...` does with plugkit: it launches the plugin named by
// its argument (gpplugin) with AutoMTLS, lists its services through gRPC
// reflection, prints them and stops the plugin (go-plugin's Kill: its
// Shutdown RPC, then the wait for the exit). The benchmark report times
// it as a whole process beside `plugkit inspect`.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/bench/internal/gpecho"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gpinspect PLUGIN (the go-plugin echo plugin, bench/testdata/gpplugin)")
		os.Exit(2)
	}
	client := gpecho.NewClient(os.Args[1])
	err := inspect(client)
	client.Kill()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpinspect:", err)
		os.Exit(1)
	}
}

// inspect starts the plugin and prints the services it lists.
func inspect(client *goplugin.Client) error {
	rpc, err := client.Client()
	if err != nil {
		return err
	}
	raw, err := rpc.Dispense(echo.PluginName)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(raw.(*grpc.ClientConn)).ServerReflectionInfo(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		return err
	}
	resp, err := stream.Recv()
	if err != nil {
		return err
	}
	stream.CloseSend()
	fmt.Printf("plugin:   %s (pid %d)\nservices:\n", os.Args[1], client.ReattachConfig().Pid)
	for _, s := range resp.GetListServicesResponse().GetService() {
		fmt.Println(" ", s.GetName())
	}
	return nil
}
