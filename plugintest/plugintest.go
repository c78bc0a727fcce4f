package plugintest

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/automtls"
	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

// Cookie is the magic cookie Start uses when the plugin's Config has none,
// and the one ServeCatalog serves with.
var Cookie = handshake.Cookie{Key: "PLUGKIT_PLUGINTEST", Value: "in-process"}

// startTimeout bounds the wait for the in-process plugin's handshake and
// the host's connection to it; stopTimeout bounds its stop.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 10 * time.Second
)

// Options adjust Start. The zero value serves with AutoMTLS and offers the
// plugin every version it serves.
type Options struct {
	// Versions are the app protocol versions the host offers; nil means
	// every version in the plugin's Config.Versions, so the plugin picks
	// its highest.
	Versions []int
	// NoAutoMTLS connects in plain text.
	NoAutoMTLS bool
	// TLS is the host's TLS configuration for a plugin with its own TLS
	// (plugin.Config.TLSProvider), in place of AutoMTLS; see host.TLS.
	TLS *tls.Config
	// Logger receives the plugin's and the host's diagnostics; nil means
	// the test's log (t.Log), at warning level and above.
	Logger *slog.Logger
}

// Start serves cfg inside the test process and returns a host client
// connected to it. The plugin negotiates, listens on a private unix socket
// in a directory of the test's own, and serves with AutoMTLS, as it would
// as a separate process. t.Cleanup closes the client (the host's Shutdown)
// and waits for the plugin to stop; a plugin that does not stop, or that
// returns an error, fails the test.
//
// Start ignores cfg's LookupEnv, Handshake, KeepStdio and NoParentWatch:
// the harness sets them.
func Start(t testing.TB, cfg plugin.Config, opts ...Options) *host.Client {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if len(cfg.Versions) == 0 {
		t.Fatal("plugintest.Start: plugin.Config.Versions is empty: register the services of at least one app protocol version")
	}
	if cfg.TLSProvider != nil && o.TLS == nil {
		t.Fatal("plugintest.Start: the plugin serves its own TLS (Config.TLSProvider): give the host its PKI in Options.TLS")
	}
	if cfg.Cookie == (handshake.Cookie{}) {
		cfg.Cookie = Cookie
	}
	versions := o.Versions
	if versions == nil {
		versions = slices.Sorted(maps.Keys(cfg.Versions))
	}
	logger := o.Logger
	if logger == nil {
		logger = testutil.Logger(t)
	}
	if cfg.Logger == nil {
		cfg.Logger = logger.With("side", "plugin")
	}
	dir := shortTempDir(t)

	var id *automtls.Identity
	env := handshake.Env{Cookie: cfg.Cookie, Versions: versions, UnixSocketDir: dir}
	if !o.NoAutoMTLS && o.TLS == nil {
		var err error
		if id, err = automtls.New(); err != nil {
			t.Fatalf("plugintest.Start: %v", err)
		}
		env.ClientCert = id.PEM()
	}
	vars := map[string]string{}
	for _, kv := range env.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	lines := &lineWriter{ch: make(chan string, 1)}
	cfg.LookupEnv = func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	cfg.Handshake = lines
	cfg.KeepStdio = true
	cfg.NoParentWatch = true

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- plugin.Run(ctx, cfg) }()

	var client *host.Client
	stop := func() {
		if client != nil {
			client.Close() // the Shutdown RPC: Run returns
		} else {
			cancel() // never connected: stop it through its context
		}
		timer := time.NewTimer(stopTimeout)
		defer timer.Stop()
		select {
		case err := <-done:
			cancel()
			if err != nil {
				t.Errorf("plugintest: the plugin returned an error when it stopped: %v", err)
			}
		case <-timer.C:
			cancel() // a stop from ctx instead
			select {
			case <-done:
			case <-time.After(stopTimeout):
			}
			t.Errorf("plugintest: the plugin did not stop within %v of the host's Shutdown", stopTimeout)
		}
	}

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	var line string
	select {
	case line = <-lines.ch:
	case err := <-done:
		cancel()
		t.Fatalf("plugintest.Start: the plugin stopped before its handshake: %v", err)
	case <-timer.C:
		cancel()
		t.Fatalf("plugintest.Start: no handshake line from the plugin within %v", startTimeout)
	}
	t.Cleanup(stop)
	cctx, ccancel := context.WithTimeout(context.Background(), startTimeout)
	defer ccancel()
	security := host.AutoMTLS(id)
	switch {
	case o.TLS != nil:
		security = host.TLS(o.TLS)
	case o.NoAutoMTLS:
		security = host.Plaintext()
	}
	c, err := host.Connect(cctx, line, host.Options{
		Name:     t.Name(),
		Versions: versions,
		Security: security,
		Logger:   logger.With("side", "host"),
	}, host.Attach{UnixSocketDir: dir})
	if err != nil {
		t.Fatalf("plugintest.Start: %v", err)
	}
	client = c
	return c
}

// ServeCatalog serves cat inside the test process (as catalog.Serve would
// as a binary, through Start) and returns a Manager on which it is
// attached: manager.Dispense and a kind's typed Open dispense its
// implementations by name, through the same adapters a host uses. t.Cleanup
// closes the Manager and stops the plugin.
func ServeCatalog(t testing.TB, cat *catalog.Catalog) *manager.Manager {
	t.Helper()
	m := manager.New(manager.Config{Host: host.Options{Logger: testutil.Logger(t)}})
	c := Start(t, plugin.Config{Cookie: Cookie, Versions: map[int]plugin.Register{wire.CatalogProtocolVersion: cat.Register}})
	t.Cleanup(func() { m.Close() }) // runs before Start's cleanup
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := m.Attach(ctx, "plugintest:"+t.Name(), c); err != nil {
		t.Fatalf("plugintest.ServeCatalog: %v", err)
	}
	return m
}

// lineWriter hands the first line written to it to ch.
type lineWriter struct {
	ch chan string // buffered, written once

	mu   sync.Mutex
	buf  []byte
	sent bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent {
		return 0, errors.New("plugintest: the plugin wrote to its handshake output twice")
	}
	w.buf = append(w.buf, p...)
	if i := strings.IndexByte(string(w.buf), '\n'); i >= 0 {
		w.ch <- string(w.buf[:i])
		w.sent = true
	}
	return len(p), nil
}

// shortTempDir is a private directory for the sockets, under the
// system's temporary directory rather than t.TempDir, whose long test
// names may not fit in a unix socket path.
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "plugintest-")
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
