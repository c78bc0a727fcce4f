package host_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/plugin"
)

// ExampleDial connects to a plugin that runs as a network service. Here
// the service runs in-process, on loopback without TLS; a real one is a
// plugin binary started with PLUGKIT_LISTEN and its TLS files, and the
// host sets Options.Security to host.TLS with its client certificate and the service's CA.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The service: what PLUGKIT_LISTEN=127.0.0.1:0 PLUGKIT_INSECURE_LOOPBACK=1
	// does to any plugin binary.
	serviceCtx, stopService := context.WithCancel(ctx)
	defer stopService()
	pr, pw := io.Pipe()
	go plugin.RunIn(serviceCtx, plugin.Config{
		Versions: map[int]plugin.Register{1: (&remotetest.TestService{ID: "replica-1"}).Register},
		Logger:   slog.New(slog.DiscardHandler),
	}, plugin.Harness{
		LookupEnv: remotetest.Lookup(map[string]string{plugin.EnvListen: "127.0.0.1:0", plugin.EnvInsecureLoopback: "1"}),
		Handshake: pw, // in-process only: where the service listens
		KeepStdio: true,
	})
	addr, _ := bufio.NewReader(pr).ReadString('\n')

	// The host.
	client, err := host.Dial(ctx, host.Remote{Endpoints: []string{strings.TrimSpace(addr)}}, host.Options{
		Versions: []int{1},
		Security: host.Plaintext(), // loopback only
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close() // disconnects; the service keeps serving other hosts

	resp, err := testgrpc.NewTestServiceClient(client.Conn()).UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("version", client.Version(), "answered by", string(resp.GetPayload().GetBody()))
	// Output: version 1 answered by replica-1
}
