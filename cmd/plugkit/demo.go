package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
)

func init() {
	commands["demo"] = command{
		summary: "build the example object-store plugin and use it through the host",
		run:     runDemo,
	}
}

// demoPlugins are the example plugins the demo builds, by package path.
var demoPlugins = map[string]string{
	"memory": "github.com/plugkit/plugkit/examples/objectstore/plugins/memory",
}

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo", "plugkit demo [--verbose]", stderr)
	verbose := fs.Bool("verbose", false, "show the plugins' log records")
	if _, err := parseArgs(fs, args); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := demo(ctx, stdout, stderr, *verbose); err != nil {
		fmt.Fprintf(stderr, "plugkit demo: %v\n", err)
		return 1
	}
	return 0
}

func demo(ctx context.Context, out, stderr io.Writer, verbose bool) error {
	dir, err := os.MkdirTemp("", "plugkit-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	step := func(format string, args ...any) { fmt.Fprintf(out, "==> "+format+"\n", args...) }
	step("building the example plugins into %s", dir)
	bin, err := buildPlugin(ctx, dir, "memory")
	if err != nil {
		return err
	}

	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	step("starting %s through the host (AutoMTLS on)", filepath.Base(bin))
	client, err := host.Start(ctx, host.Config{
		Path:     bin,
		Cookie:   objectstore.Cookie,
		Versions: []int{1},
		Logger:   slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		return err
	}
	defer client.Close()
	fmt.Fprintf(out, "    pid %d, %s %s, app protocol version %d, TLS %v, ready in %v\n",
		client.Pid(), client.Network(), client.Address(), client.Version(), client.TLS(), client.StartDuration().Round(100*time.Microsecond))

	store := objectstorev1.NewObjectStoreClient(client.Conn())
	if _, err := store.Init(ctx, &objectstorev1.InitRequest{Config: map[string]string{"bucket": "demo"}}); err != nil {
		return err
	}
	big := make([]byte, 8<<20)
	rand.Read(big)
	objects := []struct {
		key  string
		data []byte
	}{
		{"greetings/hello.txt", []byte("hello from the plugkit demo\n")},
		{"greetings/bye.txt", []byte("goodbye\n")},
		{"blobs/random-8MiB.bin", big},
	}
	step("storing %d objects", len(objects))
	for _, o := range objects {
		start := time.Now()
		if err := objectstore.Put(ctx, store, o.key, o.data); err != nil {
			return err
		}
		fmt.Fprintf(out, "    put %-24s %9d bytes  sha256 %x  %v\n", o.key, len(o.data), sha256.Sum256(o.data), time.Since(start).Round(100*time.Microsecond))
	}
	step("reading them back")
	for _, o := range objects {
		got, err := objectstore.Get(ctx, store, o.key)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, o.data) {
			return fmt.Errorf("%s came back different: %d bytes, want %d", o.key, len(got), len(o.data))
		}
		fmt.Fprintf(out, "    get %-24s %9d bytes  identical\n", o.key, len(got))
	}
	list, err := store.List(ctx, &objectstorev1.ListRequest{Prefix: "greetings/"})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "    list greetings/ -> %v\n", list.GetKeys())
	if _, err := store.Delete(ctx, &objectstorev1.DeleteRequest{Key: "greetings/bye.txt"}); err != nil {
		return err
	}
	ex, err := store.Exists(ctx, &objectstorev1.ExistsRequest{Key: "greetings/bye.txt"})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "    delete greetings/bye.txt -> exists now: %v\n", ex.GetExists())

	step("closing the plugin (Shutdown RPC, then SIGTERM and SIGKILL only if needed)")
	start := time.Now()
	if err := client.Close(); err != nil {
		return err
	}
	fmt.Fprintf(out, "    closed in %v; process reaped\n", time.Since(start).Round(100*time.Microsecond))
	step("done; removed %s", dir)
	return nil
}

// buildPlugin builds an example plugin with the go command into dir.
func buildPlugin(ctx context.Context, dir, name string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, demoPlugins[name])
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building plugin %s (the demo runs from a plugkit checkout with Go installed): %v\n%s", name, err, errBuf.String())
	}
	return bin, nil
}
