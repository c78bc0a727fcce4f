package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/bench/internal/scale"
)

// The shape of BenchmarkScale (issue 42's table): scalePlugins plugins,
// scaleInFlight starts in flight at a time.
const (
	scalePlugins  = 300
	scaleInFlight = 8
)

// BenchmarkScale runs the scale hosts, plugkit's (bench/testdata/pkscale:
// host.Start with AutoMTLS, Close) and go-plugin v1.8.0's
// (bench/testdata/gpscale: NewClient, Client, Dispense with AutoMTLS,
// Kill), each as a process of its own, each on its own echo plugin: 300
// plugins, 8 starts in flight, one call each, then all closed at once.
// Each iteration runs them in the order plugkit, go-plugin, go-plugin,
// plugkit, so that drift in the machine's load falls on both alike, and
// reports each side's medians: the start of one plugin (ms), closing all
// (ms), the host's CPU time in that close (ms), and the host's goroutines,
// file descriptors and resident KiB per plugin. Linux only: the hosts
// count from /proc.
func BenchmarkScale(b *testing.B) {
	if err := scaleLimits(scalePlugins); err != nil {
		b.Fatal(err)
	}
	var pk, gp []scale.Result
	for b.Loop() {
		pk = append(pk, runScale(b, bin.pkscale, bin.pkplugin))
		gp = append(gp, runScale(b, bin.gpscale, bin.gpplugin))
		gp = append(gp, runScale(b, bin.gpscale, bin.gpplugin))
		pk = append(pk, runScale(b, bin.pkscale, bin.pkplugin))
	}
	for _, side := range []struct {
		name string
		rs   []scale.Result
	}{{"plugkit", pk}, {"goplugin", gp}} {
		med := func(f func(scale.Result) float64) float64 {
			v := make([]float64, len(side.rs))
			for i, r := range side.rs {
				v[i] = f(r)
			}
			slices.Sort(v)
			if len(v)%2 == 1 {
				return v[len(v)/2]
			}
			return (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		b.ReportMetric(med(func(r scale.Result) float64 { return r.StartMS }), side.name+"-start-ms")
		b.ReportMetric(med(func(r scale.Result) float64 { return r.CloseAllMS }), side.name+"-close-ms")
		b.ReportMetric(med(func(r scale.Result) float64 { return r.Goroutines }), side.name+"-goroutines")
		b.ReportMetric(med(func(r scale.Result) float64 { return r.FDs }), side.name+"-fds")
		b.ReportMetric(med(func(r scale.Result) float64 { return r.RSSKiB }), side.name+"-rss-KiB")
		b.ReportMetric(med(func(r scale.Result) float64 { return r.HostCloseCPUMS }), side.name+"-close-host-cpu-ms")
	}
}

// runScale runs one scale host on its plugin, within a deadline; the
// host closes every plugin it started before it exits, and the kernel
// kills it if this process dies first.
func runScale(b *testing.B, hostBin, plugin string) scale.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, hostBin, plugin, fmt.Sprint(scalePlugins), fmt.Sprint(scaleInFlight))
	killWithParent(cmd)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s: %v\n%s", hostBin, err, stderr.String())
	}
	r, err := scale.Parse(strings.TrimSpace(string(out)))
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// scaleLimits says what to raise when this machine cannot run n plugins
// and their host: file descriptors (the host's soft limit, which Go raises
// to the hard one at start) and processes.
func scaleLimits(n int) error {
	var nofile syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
		return err
	}
	// Each plugin costs its host 4-5 descriptors (go-plugin's host 4,
	// plugkit's at most 5 before issue 42), plus the host's own.
	if need := uint64(6*n + 100); nofile.Max < need {
		return fmt.Errorf("the scale benchmark needs %d file descriptors for %d plugins and their host; the hard limit is %d: raise it (ulimit -Hn %d as root, or LimitNOFILE in the service's unit)", need, n, nofile.Max, need)
	}
	data, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return err
	}
	var pidMax int
	if _, err := fmt.Sscan(string(data), &pidMax); err != nil {
		return err
	}
	// Each Go plugin runs some 8 threads, and each counts against pid_max.
	if need := 10*n + 1000; pidMax < need {
		return fmt.Errorf("the scale benchmark runs %d plugins of some 8 threads each: kernel.pid_max is %d, want at least %d (sysctl kernel.pid_max=%d)", n, pidMax, need, need)
	}
	return nil
}
