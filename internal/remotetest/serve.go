package remotetest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/plugin"
)

// Start runs a plugin service in-process with the environment env and
// returns its address and a stop function (the SIGTERM drain) that waits
// for it to end; the test's cleanup stops it too. cfg.Versions nil means
// a TestService with ID id at version 1.
func Start(tb testing.TB, env map[string]string, id string, cfg plugin.Config) (addr string, stop func() error) {
	tb.Helper()
	pr, pw := io.Pipe()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Versions == nil {
		cfg.Versions = map[int]plugin.Register{1: (&TestService{ID: id}).Register}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := plugin.RunIn(ctx, cfg, plugin.Harness{LookupEnv: Lookup(env), Handshake: pw, KeepStdio: true})
		pw.CloseWithError(errors.New("service ended"))
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		tb.Fatalf("service did not start: %v (Run: %v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	stopped := false
	var stopErr error
	stop = func() error {
		if stopped {
			return stopErr
		}
		stopped = true
		cancel()
		select {
		case stopErr = <-done:
		case <-time.After(30 * time.Second):
			stopErr = errors.New("service did not stop within 30 s")
		}
		return stopErr
	}
	tb.Cleanup(func() { stop() })
	return strings.TrimSpace(line), stop
}

// StartProbed is Start with the plain health port (plugin.EnvHealthListen)
// on a port the system picks, and returns that port's address too. Asking
// the system for a free port and handing it to the service would race:
// nothing holds a port once its listener is closed, and another listener
// on 127.0.0.1:0 (the service's own, or another test's) may be given it
// first, as CI saw under Wine.
func StartProbed(tb testing.TB, env map[string]string, id string, cfg plugin.Config) (addr, healthAddr string, stop func() error) {
	tb.Helper()
	probed := make(map[string]string, len(env)+1)
	for k, v := range env {
		probed[k] = v
	}
	probed[plugin.EnvHealthListen] = "127.0.0.1:0"
	next := cfg.Logger
	if next == nil {
		next = slog.New(slog.DiscardHandler)
	}
	rec := &probeAddress{next: next.Handler(), found: new(foundAddress)}
	cfg.Logger = slog.New(rec)
	addr, stop = Start(tb, probed, id, cfg)
	// The service logs the health port's address before it writes the
	// line Start waits for.
	if healthAddr = rec.get(); healthAddr == "" {
		tb.Fatal("the service logged no address for its health port")
	}
	return addr, healthAddr, stop
}

// probeAddress passes records on to next and keeps the address of the one
// that says where the health port listens.
type probeAddress struct {
	next  slog.Handler
	found *foundAddress // shared with the handlers WithAttrs and WithGroup make
}

// foundAddress is the health port's address, once logged.
type foundAddress struct {
	mu   sync.Mutex
	addr string
}

func (p *probeAddress) get() string {
	p.found.mu.Lock()
	defer p.found.mu.Unlock()
	return p.found.addr
}

func (p *probeAddress) Enabled(ctx context.Context, l slog.Level) bool {
	return l == slog.LevelInfo || p.next.Enabled(ctx, l)
}

func (p *probeAddress) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "health listening") {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "address" {
				p.found.mu.Lock()
				p.found.addr = a.Value.String()
				p.found.mu.Unlock()
				return false
			}
			return true
		})
	}
	if !p.next.Enabled(ctx, r.Level) {
		return nil
	}
	return p.next.Handle(ctx, r)
}

func (p *probeAddress) WithAttrs(as []slog.Attr) slog.Handler {
	return &probeAddress{next: p.next.WithAttrs(as), found: p.found}
}

func (p *probeAddress) WithGroup(name string) slog.Handler {
	return &probeAddress{next: p.next.WithGroup(name), found: p.found}
}
