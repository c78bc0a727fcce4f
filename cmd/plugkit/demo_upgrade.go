package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/manager"
)

// The demo's upgrade policy: short, so that the demo stays short.
const (
	demoProbation = time.Second
	demoDrain     = 5 * time.Second
	demoDebounce  = 100 * time.Millisecond
	// demoWorkers call the fs plugin while it is upgraded.
	demoWorkers = 4
)

// goBuildRelease builds the example plugin name at release version into
// out (a release that dies at its first call after Init when broken):
// the example plugins take both at link time.
func goBuildRelease(ctx context.Context, out, name, version string, broken bool) error {
	ldflags := "-X main.version=" + version
	if broken {
		ldflags += " -X main.brokenRelease=yes"
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", ldflags, "-o", out, examplePluginPkg+name)
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building release %s of plugin %s (the demo runs from a plugkit checkout with Go installed): %v\n%s", version, name, err, errBuf.String())
	}
	return nil
}

// demoUpgrade upgrades the fs plugin under load: a release installed
// into the watched plugin directory takes over, then a broken one is
// rolled back; the load's failed calls are counted. m is a new manager
// of pluginDir; upgrades gets the results of its refreshes
// (Config.Watch.OnRefresh).
func demoUpgrade(ctx context.Context, out io.Writer, step demoStep, m *manager.Manager, pluginDir, dataDir, work string, upgrades <-chan []manager.UpgradeResult) error {
	// The heading first: the step's own Discover, start and Init belong
	// to it (their spans too, which TestDemo leaves out of its trace by step).
	step("upgrading example.com/fs under load: %d workers call it while new releases are installed into %s, which the manager watches", demoWorkers, pluginDir)
	if err := m.Discover(ctx); err != nil {
		return err
	}
	fsStore, err := objectstore.Open(ctx, m, "example.com/fs")
	if err == nil {
		err = fsStore.Init(ctx, map[string]string{"dir": dataDir})
	}
	if err != nil {
		return err
	}
	staging := filepath.Join(work, "staging")
	if err := os.Mkdir(staging, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(out, "    go build -ldflags \"-X main.version=2.2.0\" and a broken 2.3.0 (-X main.brokenRelease=yes) of %sfs\n", examplePluginPkg)
	for _, r := range []struct {
		version string
		broken  bool
	}{{"2.2.0", false}, {"2.3.0", true}} {
		if err := goBuildRelease(ctx, filepath.Join(staging, r.version), "fs", r.version, r.broken); err != nil {
			return err
		}
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() { watched <- m.Watch(watchCtx) }()
	defer func() {
		stopWatch()
		<-watched
	}()
	printStatus(indent(out), m.Status())
	load := startLoad(ctx, fsStore)
	var failedBefore int64 // failed calls before the broken release
	for _, r := range []struct{ version, note string }{{"2.2.0", ""}, {"2.3.0", ", broken: it dies at its first call"}} {
		if r.version == "2.3.0" {
			failedBefore = load.failed.Load()
		}
		// As plugkit install does: renamed into place, never half written.
		if err := os.Rename(filepath.Join(staging, r.version), filepath.Join(pluginDir, "fs")); err != nil {
			load.stop()
			return err
		}
		fmt.Fprintf(out, "    installed fs %s%s\n", r.version, r.note)
		if err := demoUpgraded(ctx, out, upgrades); err != nil {
			load.stop()
			return err
		}
		printStatus(indent(out), m.Status())
	}
	calls, failed, firstErr := load.stop()
	if failedBefore > 0 {
		return fmt.Errorf("%d calls failed during the upgrade to 2.2.0; the first: %w", failedBefore, firstErr)
	}
	// The calls in flight on the broken release when it died fail: at
	// most one per worker.
	if died := failed - failedBefore; died > demoWorkers {
		return fmt.Errorf("%d calls failed during the rollback, more than the %d in flight when the broken release died; the first: %w", died, demoWorkers, firstErr)
	}
	fmt.Fprintf(out, "    load: %d calls, %d failed during the switch to 2.2.0, %d during the rollback (the calls in flight on 2.3.0 when it died)\n", calls, failedBefore, failed-failedBefore)
	return nil
}

// demoUpgraded waits for the refresh that upgrades the fs plugin and
// prints its outcome.
func demoUpgraded(ctx context.Context, out io.Writer, upgrades <-chan []manager.UpgradeResult) error {
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case results := <-upgrades:
			for _, r := range results {
				switch r.Outcome {
				case manager.UpgradeCompleted:
					fmt.Fprintf(out, "    switched: %s -> %s, Init replayed; the old process drained and closed (%v)\n", releaseName(r.From), releaseName(r.To), r.Took.Round(time.Millisecond))
					return nil
				case manager.UpgradeRolledBack:
					fmt.Fprintf(out, "    rolled back to %s: %s\n", releaseName(r.From), oneLine(r.Cause))
					return nil
				case manager.UpgradeRefused:
					return fmt.Errorf("the upgrade to %s was refused: %w", r.To.Version, r.Cause)
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return errors.New("no upgrade within 2 minutes of an install")
		}
	}
}

// demoLoad is the demo's load: workers that call a store until stopped.
type demoLoad struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	calls    atomic.Int64
	failed   atomic.Int64
	errOnce  sync.Once
	firstErr error
}

// startLoad starts demoWorkers workers that each put an object of their
// own and read it back, again and again, until stop.
func startLoad(ctx context.Context, s objectstore.Store) *demoLoad {
	ctx, cancel := context.WithCancel(ctx)
	l := &demoLoad{cancel: cancel}
	for i := range demoWorkers {
		l.wg.Go(func() {
			key := fmt.Sprintf("load/worker-%d", i)
			for n := 0; ; n++ {
				want := []byte(fmt.Sprint(n))
				err := s.Put(ctx, key, want)
				if ctx.Err() != nil {
					return
				}
				l.record(err)
				if err != nil {
					continue
				}
				got, err := s.Get(ctx, key)
				if ctx.Err() != nil {
					return
				}
				if err == nil && !bytes.Equal(got, want) {
					err = fmt.Errorf("get %s: %q, want %q", key, got, want)
				}
				l.record(err)
			}
		})
	}
	return l
}

// record counts a call that ended in err.
func (l *demoLoad) record(err error) {
	l.calls.Add(1)
	if err != nil {
		l.failed.Add(1)
		l.errOnce.Do(func() { l.firstErr = err })
	}
}

// stop stops the workers and returns the count of calls, of failed ones,
// and the first failure.
func (l *demoLoad) stop() (calls, failed int64, first error) {
	l.cancel()
	l.wg.Wait()
	return l.calls.Load(), l.failed.Load(), l.firstErr
}
