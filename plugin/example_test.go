package plugin_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/broker"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/plugin"
)

// examplePluginMain is what a plugin's main function looks like: it
// serves app protocol versions 1 and 2 of an object store (a stand-in whose
// Exists says yes to the name of the version that serves it).
func examplePluginMain() {
	plugin.Serve(plugin.Config{
		Cookie: cookie,
		Versions: map[int]plugin.Register{
			1: versionService("v1"),
			2: versionService("v2"),
		},
	})
}

func versionService(name string) plugin.Register {
	return func(s *grpc.Server, _ *broker.Broker) error {
		objectstorev1.RegisterObjectStoreServer(s, versionStore{name: name})
		return nil
	}
}

type versionStore struct {
	objectstorev1.UnimplementedObjectStoreServer
	name string
}

func (v versionStore) Exists(_ context.Context, req *objectstorev1.ExistsRequest) (*objectstorev1.ExistsResponse, error) {
	return &objectstorev1.ExistsResponse{Exists: req.GetKey() == v.name}, nil
}

// ExampleServe runs examplePluginMain in a plugin process (this test
// binary, see TestMain) and loads it from a host that speaks versions 1
// and 2: version 2 is chosen.
func ExampleServe() {
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := host.Start(ctx, host.Command{
		Path:   exe,
		Env:    []string{"PLUGKIT_PLUGIN_TEST_ROLE=plugin", "GORACE=atexit_sleep_ms=0"},
		Cookie: cookie,
	}, host.Options{Versions: []int{1, 2}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	resp, err := objectstorev1.NewObjectStoreClient(client.Conn()).Exists(ctx, &objectstorev1.ExistsRequest{Key: "v2"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("negotiated:", client.Version(), "TLS:", client.TLS(), "served by v2:", resp.GetExists())
	// Output: negotiated: 2 TLS: true served by v2: true
}
