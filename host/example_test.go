package host_test

import (
	"context"
	"fmt"
	"os"
	"time"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
)

// ExampleStart launches a plugin, calls it through the generated gRPC
// stub and closes it. The plugin here is this test binary in plugin mode
// (see TestMain); in a real host Path names the plugin executable.
func ExampleStart() {
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	client, err := host.Start(ctx, host.Command{
		Path:   exe,
		Env:    []string{modeEnv + "=kv", "GORACE=atexit_sleep_ms=0"},
		Cookie: testCookie,
	}, host.Options{Versions: []int{1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	store := objectstorev1.NewObjectStoreClient(client.Conn())
	resp, err := store.Exists(ctx, &objectstorev1.ExistsRequest{Key: "yes-please"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("protocol version:", client.Version())
	fmt.Println("AutoMTLS:", client.TLS())
	fmt.Println("exists:", resp.GetExists())
	// Output:
	// protocol version: 1
	// AutoMTLS: true
	// exists: true
}
