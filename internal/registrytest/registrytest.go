package registrytest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"

	// The htpasswd access controller and the filesystem storage driver
	// register themselves by name.
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

// Options configures a registry; the zero value is plain HTTP without auth.
type Options struct {
	// TLS, when set, serves HTTPS with this configuration (a certificate
	// for 127.0.0.1).
	TLS *tls.Config
	// Username and Password, when Username is set, require HTTP basic
	// auth through the registry's htpasswd access controller.
	Username, Password string
	// Wrap, when set, wraps the registry's handler, so that a test can
	// slow it down or count requests.
	Wrap func(http.Handler) http.Handler
}

// Registry is a running registry.
type Registry struct {
	// Host is "127.0.0.1:PORT", the registry part of a reference.
	Host string
	// URL is "http://127.0.0.1:PORT" or "https://...".
	URL string
}

// Start runs a registry until the test ends.
func Start(t testing.TB, opts Options) *Registry {
	t.Helper()
	logrus.SetOutput(io.Discard)
	cfg := &configuration.Configuration{
		Storage: configuration.Storage{
			"filesystem": configuration.Parameters{"rootdirectory": testutil.TempDir(t)},
			"delete":     configuration.Parameters{"enabled": true},
			"maintenance": configuration.Parameters{"uploadpurging": map[any]any{
				"enabled": false,
			}},
		},
	}
	if runtime.GOOS == "windows" {
		// The filesystem driver renames files it still holds open, which
		// Windows refuses ("sharing violation"): keep blobs in memory.
		delete(cfg.Storage, "filesystem")
		cfg.Storage["inmemory"] = configuration.Parameters{}
	}
	cfg.Log.Level = "error"
	cfg.HTTP.Secret = "registrytest"
	if opts.Username != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(opts.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(testutil.TempDir(t), "htpasswd")
		if err := os.WriteFile(path, fmt.Appendf(nil, "%s:%s\n", opts.Username, hash), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "registrytest", "path": path}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var h http.Handler = handlers.NewApp(ctx, cfg)
	if opts.Wrap != nil {
		h = opts.Wrap(h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	scheme := "http"
	if opts.TLS != nil {
		ln = tls.NewListener(ln, opts.TLS)
		scheme = "https"
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		srv.Shutdown(ctx)
		cancel()
	})
	host := ln.Addr().String()
	return &Registry{Host: host, URL: scheme + "://" + host}
}
