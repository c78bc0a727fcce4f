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
	"bytes"
	"context"
	"errors"
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
	logrus.SetLevel(logrus.ErrorLevel)
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
	var app http.Handler = handlers.NewApp(ctx, cfg)
	if root == "" {
		app = wholeBodies(app)
	}
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

// maxBody bounds a request body that wholeBodies reads into memory: over
// ten times the largest plugin the tests push (about 20 MB).
const maxBody = 256 << 20

// wholeBodies reads each request's body into memory (at most maxBody
// bytes: beyond, 413) before h sees it. The in-memory driver grows an
// upload's buffer by each write, copying what it holds: a 20 MB blob that
// arrives in small reads (loopback between two processes under Wine)
// cost minutes of copying; from memory it is written in few large writes.
func wholeBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
			if err != nil {
				code := http.StatusBadRequest
				if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
					code = http.StatusRequestEntityTooLarge
				}
				http.Error(w, fmt.Sprintf("registry: reading the request body: %v", err), code)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		h.ServeHTTP(w, r)
	})
}
