package plugin_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/plugkit/plugkit/broker"
	greeterv1 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/reflectcall"
	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/plugintest"
)

// TestBothModesServeOneServer: a plugin started by its host and the same
// plugin run as a service (EnvListen) serve the same services, listed by
// reflection, except stdio, which only a host that started the plugin
// reads.
func TestBothModesServeOneServer(t *testing.T) {
	cfg := plugin.Config{Versions: map[int]plugin.Register{1: func(s *grpc.Server, _ *broker.Broker) error {
		greeterv1.RegisterGreeterServer(s, greeterv1.UnimplementedGreeterServer{})
		return nil
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list := func(conn grpc.ClientConnInterface) []string {
		t.Helper()
		names, err := reflectcall.New(conn).Services(ctx)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		return names
	}
	hosted := list(plugintest.Start(t, cfg, plugintest.Options{Security: host.Plaintext()}).Conn())

	addr, _ := remotetest.Start(t, map[string]string{plugin.EnvListen: "127.0.0.1:0", plugin.EnvInsecureLoopback: "1"}, "", cfg)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	service := list(conn)

	want := []string{
		"greeter.v1.Greeter",
		"grpc.health.v1.Health",
		"grpc.reflection.v1.ServerReflection",
		"grpc.reflection.v1alpha.ServerReflection",
		"plugin.GRPCBroker",
		"plugin.GRPCController",
	}
	if !slices.Equal(service, want) {
		t.Errorf("the service serves %v; want %v", service, want)
	}
	want = append(want, "plugin.GRPCStdio")
	slices.Sort(want)
	if !slices.Equal(hosted, want) {
		t.Errorf("the hosted plugin serves %v; want %v", hosted, want)
	}
}
