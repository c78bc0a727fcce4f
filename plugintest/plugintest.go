package plugintest

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/plugkit/plugkit/internal/hostwire"
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

// Options adjust Start and Run. The zero value serves with AutoMTLS and offers the
// plugin every version it serves.
type Options struct {
	// Versions are the app protocol versions the host offers; nil means
	// every version in the plugin's Config.Versions, so the plugin picks
	// its highest.
	Versions []int
	// Security is how the host connects: the zero value is AutoMTLS, with
	// an identity Start makes and gives the plugin (an identity passed in
	// host.AutoMTLS is not used); host.Plaintext() connects in plain text,
	// and host.TLS(cfg) is for a plugin with its own TLS
	// (plugin.Config.TLSProvider), and for it alone.
	Security host.Security
	// Logger receives the plugin's and the host's diagnostics; nil means
	// the test's log (t.Log), at warning level and above, for Start, and
	// none for Run.
	Logger *slog.Logger
	// Telemetry is the host's (host.Options.Telemetry); give the plugin
	// its TracerProvider in plugin.Config.TracerProvider to see one trace
	// across both.
	Telemetry host.Telemetry
}

// Start serves cfg inside the test process and returns a host client
// connected to it. The plugin negotiates, listens on a private unix socket
// in a directory of the test's own, and serves with AutoMTLS, as it would
// as a separate process. t.Cleanup closes the client (the host's Shutdown)
// and waits for the plugin to stop; a plugin that does not stop, or that
// returns an error, fails the test. Options{} serves with AutoMTLS,
// offers every version and logs to the test's log.
func Start(t testing.TB, cfg plugin.Config, opts Options) *host.Client {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testutil.Logger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, stop, err := start(ctx, cfg, opts, t.Name())
	if err != nil {
		t.Fatalf("plugintest.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// Run serves cfg inside this process and returns a host client connected
// to it, as Start does, for code that has no testing.TB: an example, a
// TestMain, a benchmark's setup. ctx bounds the start (the handshake and
// the host's connection), not the plugin's life. stop closes the client
// (the host's Shutdown), waits for the plugin to stop and removes its
// socket's directory; it returns an error when the plugin returned one or
// did not stop in time. Call it once done with the client; calling it
// again returns the same result. A nil Options.Logger discards the
// diagnostics.
func Run(ctx context.Context, cfg plugin.Config, opts Options) (c *host.Client, stop func() error, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return start(ctx, cfg, opts, "plugintest")
}

// start serves cfg in-process and connects a host named name to it.
func start(ctx context.Context, cfg plugin.Config, o Options, name string) (*host.Client, func() error, error) {
	if len(cfg.Versions) == 0 {
		return nil, nil, errors.New("plugin.Config.Versions is empty: register the services of at least one app protocol version")
	}
	if cfg.Debug {
		return nil, nil, errors.New("plugin.Config.Debug is set: debug mode serves for a person and prints a reattach line, not the handshake plugintest connects with; unset it in tests (reattach to a plugin in debug mode with host.Reattach)")
	}
	plaintext := o.Security == host.Plaintext()
	ownTLS := hostwire.OwnTLS.(func(host.Security) bool)(o.Security)
	if cfg.TLSProvider != nil && !ownTLS {
		return nil, nil, errors.New("the plugin serves its own TLS (Config.TLSProvider): give the host its PKI in Options.Security, as host.TLS(cfg)")
	}
	if cfg.Cookie == (handshake.Cookie{}) {
		cfg.Cookie = Cookie
	}
	if cfg.Logger == nil {
		cfg.Logger = o.Logger.With("side", "plugin")
	}
	versions := o.Versions
	if versions == nil {
		versions = slices.Sorted(maps.Keys(cfg.Versions))
	}
	if cfg.TLSProvider == nil && ownTLS {
		return nil, nil, errors.New("the plugin serves no TLS of its own (no Config.TLSProvider), but Options.Security is host.TLS(cfg): leave Options.Security zero for AutoMTLS, or give the plugin a TLSProvider")
	}
	dir, err := os.MkdirTemp("", "plugintest-")
	if err != nil {
		return nil, nil, err
	}
	env := handshake.Env{Cookie: cfg.Cookie, Versions: versions, UnixSocketDir: dir}
	var id *automtls.Identity
	security := o.Security
	if !plaintext && !ownTLS {
		if id, err = automtls.New(); err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		env.ClientCert = id.PEM()
		security = host.AutoMTLS(id)
	}
	p := serve(cfg, env, dir)
	line, err := p.handshake(ctx)
	if err == nil {
		p.client, err = host.Connect(ctx, line, host.Options{
			Name:      name,
			Versions:  versions,
			Security:  security,
			Logger:    o.Logger.With("side", "host"),
			Telemetry: o.Telemetry,
		}, host.ConnectOptions{UnixSocketDir: dir})
	}
	if err != nil {
		p.stop()
		return nil, nil, err
	}
	return p.client, p.stop, nil
}

// inProcess is a plugin served by plugin.Run in this process.
type inProcess struct {
	cancel context.CancelFunc
	done   chan error // Run's result; buffered
	lines  *lineWriter
	dir    string
	client *host.Client // once connected

	once    sync.Once
	stopErr error
}

// serve runs plugin.Run on cfg in the background, with the environment
// env (as a launching host would set it) and its handshake line captured.
func serve(cfg plugin.Config, env handshake.Env, dir string) *inProcess {
	vars := map[string]string{}
	for _, kv := range env.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	p := &inProcess{done: make(chan error, 1), lines: &lineWriter{ch: make(chan string, 1)}, dir: dir}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	h := plugin.Harness{
		LookupEnv:     func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
		Handshake:     p.lines,
		KeepStdio:     true,
		NoParentWatch: true,
	}
	go func() { p.done <- plugin.RunIn(ctx, cfg, h) }()
	return p
}

// handshake waits for the plugin's handshake line.
func (p *inProcess) handshake(ctx context.Context) (string, error) {
	select {
	case line := <-p.lines.ch:
		return line, nil
	case err := <-p.done:
		p.done <- err // for stop
		return "", fmt.Errorf("the plugin stopped before its handshake: %v", err)
	case <-ctx.Done():
		return "", fmt.Errorf("no handshake line from the plugin: %w", context.Cause(ctx))
	}
}

// stop stops the plugin, once, and removes its directory.
func (p *inProcess) stop() error {
	p.once.Do(func() {
		p.stopErr = p.halt()
		os.RemoveAll(p.dir)
	})
	return p.stopErr
}

// halt asks the plugin to stop (the host's Shutdown, or its context when
// the host never connected) and waits for it, then stops it through its
// context if it has not stopped within stopTimeout.
func (p *inProcess) halt() error {
	defer p.cancel()
	if p.client != nil {
		p.client.Close() // the Shutdown RPC: Run returns
	} else {
		p.cancel()
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case err := <-p.done:
		if err != nil && p.client != nil {
			return fmt.Errorf("plugintest: the plugin returned an error when it stopped: %w", err)
		}
		return nil
	case <-timer.C:
	}
	p.cancel() // a stop from ctx instead
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
	}
	return fmt.Errorf("plugintest: the plugin did not stop within %v of the host's Shutdown", stopTimeout)
}

// ServeCatalog serves cat inside the test process (as catalog.Serve would
// as a binary, through Start) and returns a Manager on which it is
// attached: manager.Dispense and a kind's typed Open dispense its
// implementations by name, through the same adapters a host uses. t.Cleanup
// closes the Manager and stops the plugin.
func ServeCatalog(t testing.TB, cat *catalog.Catalog) *manager.Manager {
	t.Helper()
	m := manager.New(manager.Config{Logger: testutil.Logger(t)})
	c := Start(t, plugin.Config{Cookie: Cookie, Versions: map[int]plugin.Register{wire.CatalogProtocolVersion: cat.Register}}, Options{})
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
