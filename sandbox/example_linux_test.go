package sandbox_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/sandbox"
)

// ExampleRunner starts a plugin in the sandbox, with one directory it may
// write, and asks it to write there and elsewhere. The plugin is this
// test binary in plugin mode (see TestMain); in a real host Path names
// the plugin executable, and the host's binary imports this package.
func ExampleRunner() {
	data, _ := os.MkdirTemp("", "plugin-data-")
	defer os.RemoveAll(data)
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	client, err := host.Start(ctx, host.Command{
		Path:   exe,
		Env:    []string{probeEnv + "=1", "GORACE=atexit_sleep_ms=0"},
		Cookie: testCookie,
		Runner: sandbox.Runner{Writable: data},
	}, host.Options{Versions: []int{1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	// A listener of the host's, on the host's loopback.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()

	for _, cmd := range []string{"write " + filepath.Join(data, "note"), "write /etc/note", "dial " + ln.Addr().String()} {
		out := new(wrapperspb.StringValue)
		if err := client.Conn().Invoke(ctx, probeMethod, wrapperspb.String(cmd), out); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(strings.Replace(out.GetValue(), ln.Addr().String(), "HOST-LISTENER", 1))
	}
	// Output:
	// ok
	// open /etc/note: read-only file system
	// dial tcp HOST-LISTENER: connect: connection refused
}
