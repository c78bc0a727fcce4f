package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
)

// upgradeWorkers call the plugin while it is upgraded (BenchmarkUpgradeSwitch).
const upgradeWorkers = 4

// upgradeSteady is how long each round's steady-state window lasts.
const upgradeSteady = 500 * time.Millisecond

// buildFSReleases builds the example fs plugin at two release versions
// into dir (the plugin takes its version at link time), once.
var buildFSReleases = sync.OnceValues(func() ([2]string, error) {
	var out [2]string
	for i, v := range []string{"2.1.0", "2.2.0"} {
		out[i] = filepath.Join(bin.dir, "fs-"+v)
		cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+v, "-o", out[i], "../examples/objectstore/plugins/fs")
		if b, err := cmd.CombinedOutput(); err != nil {
			return out, fmt.Errorf("building fs %s: %v\n%s", v, err, b)
		}
	}
	return out, nil
})

// BenchmarkUpgradeSwitch upgrades a running plugin (the example fs plugin,
// its objects in a directory) once per round, alternating between two
// releases, while upgradeWorkers workers make unary calls (Stat) through
// one Conn. Each round measures, side by side: the latency of the calls
// of a steady window (upgradeSteady) and of the calls made while
// Manager.Upgrade runs (the new binary hashed and described, started,
// Init replayed, health checked and probed, the switch, the old process
// drained, a probation of 100 ms), their p50 and p99; the time from the
// Upgrade call (the refresh Watch makes once it sees the new binary) to
// the switch (UpgradeResult.Switch), against the plugin's start floor: a
// plain host.Start of the same binary to a served, health-checked
// connection; and, to tell where the time goes, a first Describe of the
// new binary by a Finder of its own (hashed, run to describe itself),
// which an upgrade makes before it starts the binary. Each figure is the
// median of the rounds (-benchtime Nx).
func BenchmarkUpgradeSwitch(b *testing.B) {
	releases, err := buildFSReleases()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	plugins, data := filepath.Join(dir, "plugins"), filepath.Join(dir, "data")
	for _, d := range []string{plugins, data} {
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	install := func(release string) {
		b.Helper()
		raw, err := os.ReadFile(release)
		if err == nil {
			err = os.WriteFile(filepath.Join(plugins, ".staged"), raw, 0o755)
		}
		if err == nil {
			err = os.Rename(filepath.Join(plugins, ".staged"), filepath.Join(plugins, "fs"))
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	install(releases[0])
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}, Host: host.Options{Logger: discard}}
	m := manager.New(manager.Config{
		Sources: []manager.Source{finder.Dirs(plugins)},
		Logger:  discard,
		Upgrade: manager.UpgradePolicy{Probation: 100 * time.Millisecond, Drain: 10 * time.Second},
	})
	defer m.Close()
	ctx := ctxFor(b, 10*time.Minute)
	if err := m.Discover(ctx); err != nil {
		b.Fatal(err)
	}
	store, err := objectstore.Open(ctx, m, "example.com/fs")
	if err == nil {
		err = store.Init(ctx, map[string]string{"dir": data})
	}
	if err == nil {
		err = store.Put(ctx, "k", []byte("upgrade"))
	}
	if err != nil {
		b.Fatal(err)
	}
	var steadyP50, steadyP99, switchP50, switchP99, serving, floor, described []time.Duration
	failed := 0
	b.ResetTimer()
	for round := range b.N {
		steady, _ := underLoad(ctx, store, func() { time.Sleep(upgradeSteady) })
		next := releases[(round+1)%2]
		install(next)
		var res manager.UpgradeResult
		var upErr error
		during, bad := underLoad(ctx, store, func() {
			res, upErr = m.Upgrade(ctx, "objectstore", "example.com/fs")
		})
		if upErr != nil || res.Outcome != manager.UpgradeCompleted {
			b.Fatalf("round %d: upgrade %+v: %v", round, res, upErr)
		}
		failed += bad
		serving = append(serving, res.Switch)
		floor = append(floor, startFloor(ctx, b, next))
		described = append(described, describeFloor(ctx, b, next))
		steadyP50, steadyP99 = append(steadyP50, pct(steady, 50)), append(steadyP99, pct(steady, 99))
		switchP50, switchP99 = append(switchP50, pct(during, 50)), append(switchP99, pct(during, 99))
	}
	b.StopTimer()
	us := func(d []time.Duration) float64 { return medianMS(d) * 1000 }
	b.ReportMetric(us(steadyP50), "steady-p50-µs")
	b.ReportMetric(us(switchP50), "switch-p50-µs")
	b.ReportMetric(us(steadyP99), "steady-p99-µs")
	b.ReportMetric(us(switchP99), "switch-p99-µs")
	b.ReportMetric(medianMS(switchP50)/medianMS(steadyP50), "p50-switch/steady")
	b.ReportMetric(medianMS(switchP99)/medianMS(steadyP99), "p99-switch/steady")
	b.ReportMetric(medianMS(serving), "seen-to-serving-ms")
	b.ReportMetric(medianMS(floor), "start-floor-ms")
	b.ReportMetric(medianMS(serving)/medianMS(floor), "serving/floor")
	b.ReportMetric(medianMS(described), "describe-ms")
	b.ReportMetric(float64(failed), "failed-calls")
	b.ReportMetric(0, "ns/op")
}

// underLoad runs upgradeWorkers workers calling s.Stat while during
// runs, and returns the latency of every call made meanwhile, and how
// many failed.
func underLoad(ctx context.Context, s objectstore.Store, during func()) ([]time.Duration, int) {
	stop := make(chan struct{})
	var mu sync.Mutex
	var lat []time.Duration
	failed := 0
	var wg sync.WaitGroup
	for range upgradeWorkers {
		wg.Go(func() {
			var mine []time.Duration
			bad := 0
			for {
				select {
				case <-stop:
					mu.Lock()
					lat, failed = append(lat, mine...), failed+bad
					mu.Unlock()
					return
				default:
				}
				t := time.Now()
				_, err := s.Stat(ctx, "k")
				mine = append(mine, time.Since(t))
				if err != nil {
					bad++
				}
			}
		})
	}
	during()
	close(stop)
	wg.Wait()
	return lat, failed
}

// startFloor is a plain start of the binary at path: host.Start to a
// served, health-checked connection, then its close (not timed).
func startFloor(ctx context.Context, b *testing.B, path string) time.Duration {
	b.Helper()
	t := time.Now()
	c, err := host.Start(ctx, host.Command{Path: path, Cookie: objectstore.Cookie}, host.Options{Versions: []int{1}, Logger: discard})
	took := time.Since(t)
	if err != nil {
		b.Fatal(err)
	}
	c.Close()
	return took
}

// describeFloor is what an upgrade spends on a new binary before it
// starts it: a Finder's first Describe of it (the file hashed, the
// plugin run to write its description).
func describeFloor(ctx context.Context, b *testing.B, path string) time.Duration {
	b.Helper()
	f := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}, Host: host.Options{Logger: discard}}
	t := time.Now()
	e := f.Describe(ctx, []string{path})[0]
	took := time.Since(t)
	if e.Err != nil {
		b.Fatal(e.Err)
	}
	return took
}

// pct is the p-th percentile of d.
func pct(d []time.Duration, p int) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, len(d)*p/100)]
}
