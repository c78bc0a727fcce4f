package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
)

// pluginsWatchSynopsis and pluginsWatchAbout are plugins watch's part
// of the usage of plugins.
const (
	pluginsWatchSynopsis = "plugkit plugins watch --dir DIR [--dir DIR...] --cookie KEY=VALUE [--use KIND/NAME...] [--upgrades N] [--drain D] [--probation D] [--names PATTERN]"
	pluginsWatchAbout    = "watch keeps a manager of the directories running, starts the plugins --use names, and upgrades them by itself when a new binary is installed into a directory (plugkit install, or a file renamed into place): it prints a line for each upgrade, and the release that serves each plugin and those that drain. It runs until interrupted, or until --upgrades upgrades have ended (completed, refused or rolled back)."
)

// watchFlags are plugins watch's own flags.
type watchFlags struct {
	use       multiFlag
	upgrades  int
	drain     time.Duration
	probation time.Duration
}

func (w *watchFlags) register(fs *flag.FlagSet) {
	fs.Var(&w.use, "use", "a plugin to start and keep serving, `KIND/NAME` (repeatable): an upgrade moves a running plugin")
	fs.IntVar(&w.upgrades, "upgrades", 0, "exit after `N` upgrades have ended (0: run until interrupted)")
	fs.DurationVar(&w.drain, "drain", 0, "how long an old release may finish its calls in flight (0: the manager's default)")
	fs.DurationVar(&w.probation, "probation", 0, "how long a new release is watched, the old one kept to roll back to (0: the manager's default)")
}

// watch is plugins watch --dir DIR...
func (p *pluginsFlags) watch(cookie handshake.Cookie, stdout, stderr io.Writer) int {
	watchCtx, stop := context.WithCancel(context.Background())
	defer stop()
	var m *manager.Manager
	out := &lockedWriter{w: stdout} // the upgrades' events and the refreshes print from their own goroutines
	status := func() []manager.PluginStatus { return m.Status() }
	m, _ = p.manager(cookie, stderr, func(cfg *manager.Config) {
		cfg.Upgrade.Drain, cfg.Upgrade.Probation = p.watched.drain, p.watched.probation
		cfg.Watch.OnRefresh = onRefresh(out, p.watched.upgrades, status, stop)
		cfg.Telemetry.OnEvent = func(e host.Event) {
			if e.Type == manager.EventUpgradeSwitched {
				// Reported once calls moved: the old release drains.
				printStatus(out, status())
			}
		}
	})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err := m.Discover(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "plugkit plugins watch: %s\n", oneLine(err))
		return 1
	}
	if bins := m.Entries(); len(bins) > 0 {
		printTable(out, bins)
	}
	for _, use := range p.watched.use {
		if err := usePlugin(m, use); err != nil {
			fmt.Fprintf(stderr, "plugkit plugins watch: --use %s: %s\n", safe(use), oneLine(err))
			return 1
		}
	}
	printStatus(out, m.Status())
	fmt.Fprintf(out, "watching %s for new binaries\n", safe(strings.Join(p.dirs, ", ")))
	if err := m.Watch(watchCtx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, manager.ErrClosed) {
		fmt.Fprintf(stderr, "plugkit plugins watch: %s\n", oneLine(err))
		return 1
	}
	return 0
}

// lockedWriter serialises the writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// onRefresh prints what each refresh did, and the status after it; it
// stops the watch after upgrades upgrades have ended (0: never).
func onRefresh(stdout io.Writer, upgrades int, status func() []manager.PluginStatus, stop func()) func([]manager.UpgradeResult, error) {
	ended := 0
	return func(results []manager.UpgradeResult, err error) {
		if err != nil {
			fmt.Fprintf(stdout, "refresh failed: %s\n", safe(oneLine(err)))
			return
		}
		for _, r := range results {
			printUpgrade(stdout, r)
			switch r.Outcome {
			case manager.UpgradeCompleted, manager.UpgradeRefused, manager.UpgradeRolledBack:
				ended++
			}
		}
		if len(results) > 0 {
			printStatus(stdout, status())
		}
		if upgrades > 0 && ended >= upgrades {
			stop()
		}
	}
}

// usePlugin dispenses KIND/NAME at the highest major it serves and calls
// its health service, so that its process runs.
func usePlugin(m *manager.Manager, use string) error {
	kind, name, ok := strings.Cut(use, "/")
	if !ok || kind == "" || name == "" {
		return fmt.Errorf("want KIND/NAME, such as objectstore/example.com/fs")
	}
	im, err := m.Lookup(kind, name)
	if err != nil {
		return err
	}
	majors := manager.Majors[*manager.Conn]{}
	for _, mj := range im.Majors {
		majors[int(mj.GetMajor())] = func(c *manager.Conn, _ manager.Info) (*manager.Conn, error) { return c, nil }
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := manager.Dispense(ctx, m, kind, name, majors)
	if err != nil {
		return err
	}
	_, err = grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	return err
}

// printUpgrade prints one upgrade's outcome on a line.
func printUpgrade(w io.Writer, r manager.UpgradeResult) {
	line := fmt.Sprintf("upgrade %s %s: %s -> %s: %s", r.Kind, r.Name, releaseName(r.From), releaseName(r.To), r.Outcome)
	if r.Took > 0 {
		line += " in " + r.Took.Round(time.Millisecond).String()
	}
	if r.Cause != nil {
		line += ": " + oneLine(r.Cause)
	}
	fmt.Fprintln(w, safe(line))
}

// printStatus prints, for each plugin in use, the release that serves it
// and those that drain, a line each.
func printStatus(w io.Writer, st []manager.PluginStatus) {
	for _, s := range st {
		line := fmt.Sprintf("serving %s %s: %s", s.Kind, s.Name, releaseName(s.Serving))
		if !s.Probation.IsZero() {
			line += fmt.Sprintf(" (on probation for %v)", time.Until(s.Probation).Round(100*time.Millisecond))
		}
		var draining []string
		for _, d := range s.Draining {
			draining = append(draining, fmt.Sprintf("%s with %d calls in flight", releaseName(d), d.InFlight))
		}
		if len(draining) == 0 {
			line += "; draining none"
		} else {
			line += "; draining " + strings.Join(draining, ", ")
		}
		fmt.Fprintln(w, safe(line))
	}
}

// releaseName is a release as the status lines name it: its version and
// its process.
func releaseName(r manager.Release) string {
	v := cmpOr(r.Version, "?")
	if r.Pid != 0 {
		return fmt.Sprintf("v%s (pid %d)", v, r.Pid)
	}
	return "v" + v
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
