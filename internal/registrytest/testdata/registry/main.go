// Command registry is the CNCF distribution registry that registrytest
// starts for tests, as a program of its own: built once without the race
// detector (testutil.BuildBinary), so that the race builds of the packages
// whose tests use a registry neither compile nor link the 133 packages
// that only it imports. It lives under testdata so that ./... (go test,
// go vet, staticcheck) leaves it out.
//
// It listens on 127.0.0.1, port chosen by the system, writes the address
// ("127.0.0.1:PORT") as its first line on standard output, and serves plain
// HTTP until its standard input ends (the test closes it, or the test
// binary exits), then shuts down within 5 seconds and exits 0.
//
// Flags: -root DIR stores blobs with the filesystem driver in DIR (empty:
// the in-memory driver); -htpasswd FILE requires HTTP basic auth checked
// against FILE (htpasswd's bcrypt format).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/sirupsen/logrus"

	// The htpasswd access controller and the storage drivers register
	// themselves by name.
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

func main() {
	root := flag.String("root", "", "store blobs in this directory (empty: in memory)")
	htpasswd := flag.String("htpasswd", "", "require basic auth checked against this htpasswd file")
	flag.Parse()
	if err := run(*root, *htpasswd); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

func run(root, htpasswd string) error {
	logrus.SetOutput(os.Stderr)
	cfg := &configuration.Configuration{
		Storage: configuration.Storage{
			"delete": configuration.Parameters{"enabled": true},
			"maintenance": configuration.Parameters{"uploadpurging": map[any]any{
				"enabled": false,
			}},
		},
	}
	if root != "" {
		cfg.Storage["filesystem"] = configuration.Parameters{"rootdirectory": root}
	} else {
		cfg.Storage["inmemory"] = configuration.Parameters{}
	}
	cfg.Log.Level = "error"
	cfg.HTTP.Secret = "registrytest"
	if htpasswd != "" {
		cfg.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "registrytest", "path": htpasswd}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := handlers.NewApp(ctx, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: app, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if _, err := fmt.Println(ln.Addr().String()); err != nil {
		return err
	}
	stdinDone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stdinDone)
	}()
	select {
	case err := <-served:
		return err
	case <-stdinDone:
	}
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	srv.Shutdown(ctx)
	return nil
}
