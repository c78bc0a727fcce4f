package remotetest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
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
