package scale

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/plugkit/plugkit/bench/internal/rss"
)

// Start starts one plugin and makes its first call. It returns how to end
// the plugin (whatever the host library's way of closing it is), or an
// error after it ended whatever it started itself.
type Start func(ctx context.Context) (stop func(), err error)

// EnvCPU, set to 1 in a scale host's environment, has it measure the CPU
// time the plugin processes spend in the close too
// (Result.PluginCloseCPUMS). Off by default: reading each plugin's
// /proc/PID/task makes the kernel drop those entries again when the
// plugin is reaped, which slows the close itself (both hosts alike) and
// adds to the host's CPU time.
const EnvCPU = "SCALE_CPU"

// Result is what one run measured.
type Result struct {
	// StartMS is the median, over the plugins, of one start: from the call
	// that starts a plugin until its first call is answered, in ms.
	StartMS float64
	// CloseAllMS is how long closing every plugin at once took, each in a
	// goroutine of its own, until the last returned, in ms.
	CloseAllMS float64
	// Goroutines, FDs and RSSKiB are what each plugin costs the host: the
	// difference between the counts after the first plugin's start (made
	// alone, and an idle pause) and after the last call (and the same
	// pause), divided by the number of plugins less one. What a host sets
	// up once for all its plugins, with the first (plugkit's spawner
	// thread, pipe poller and their epoll instances; grpc-go's and the
	// TLS stack's one-time state), is not a plugin's cost, as in host's
	// TestHostCostPerPlugin.
	Goroutines, FDs, RSSKiB float64
	// HostCloseCPUMS is the CPU time the host used while it closed them
	// all, in ms; PluginCloseCPUMS the CPU time one plugin process used
	// from the start of the close to its exit, the mean over the plugins,
	// in ms (0 unless EnvCPU is set). On 2 CPUs, 300 plugins closed at
	// once are bound by the sum.
	HostCloseCPUMS, PluginCloseCPUMS float64
	// PluginCloseSwitches is how many times one plugin process's threads
	// were switched to, or from, in the same span: the mean over the
	// plugins (0 unless EnvCPU is set). Each is a wake-up the stop costs.
	PluginCloseSwitches float64
}

// String is the line the hosts print, in the order Parse reads.
func (r Result) String() string {
	return fmt.Sprintf("%.3f %.3f %.3f %.3f %.1f %.1f %.3f %.1f", r.StartMS, r.CloseAllMS, r.Goroutines, r.FDs, r.RSSKiB, r.HostCloseCPUMS, r.PluginCloseCPUMS, r.PluginCloseSwitches)
}

// Parse reads a line String wrote.
func Parse(line string) (Result, error) {
	var r Result
	if _, err := fmt.Sscan(line, &r.StartMS, &r.CloseAllMS, &r.Goroutines, &r.FDs, &r.RSSKiB, &r.HostCloseCPUMS, &r.PluginCloseCPUMS, &r.PluginCloseSwitches); err != nil {
		return Result{}, fmt.Errorf("a scale host printed %q: %w", line, err)
	}
	return r, nil
}

// Main is a scale host's main: it reads its arguments, PLUGIN N INFLIGHT,
// runs Run with start given PLUGIN, within 5 minutes, and prints the
// Result; it exits 2 on wrong arguments and 1 on any other failure, with
// the error on stderr.
func Main(start func(ctx context.Context, plugin string) (stop func(), err error)) {
	plugin, n, inflight, err := args(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := Run(ctx, n, inflight, func(ctx context.Context) (func(), error) { return start(ctx, plugin) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(r)
}

// args reads a host's arguments: PLUGIN N INFLIGHT.
func args(args []string) (plugin string, n, inflight int, err error) {
	if len(args) != 3 {
		return "", 0, 0, errors.New("usage: a scale host takes the arguments PLUGIN N INFLIGHT: the plugin binary, how many copies to start, how many starts in flight")
	}
	if n, err = strconv.Atoi(args[1]); err != nil || n < 1 {
		return "", 0, 0, fmt.Errorf("the number of plugins %q: want a positive number", args[1])
	}
	if inflight, err = strconv.Atoi(args[2]); err != nil || inflight < 1 {
		return "", 0, 0, fmt.Errorf("the starts in flight %q: want a positive number", args[2])
	}
	return args[0], n, inflight, nil
}

// Run starts n plugins with start, at most inflight at a time, then
// closes them all at once. On any failure it stops every plugin it
// started before it returns the error.
func Run(ctx context.Context, n, inflight int, start Start) (Result, error) {
	stops := make([]func(), n)
	took := make([]time.Duration, n)
	errs := make([]error, n)
	t := time.Now()
	stops[0], errs[0] = start(ctx)
	took[0] = time.Since(t)
	if errs[0] != nil {
		return Result{}, errs[0]
	}
	time.Sleep(rss.Idle) // what ends after a start (the handshake's reader) has ended
	goroutines0, fds0, rss0 := runtime.NumGoroutine(), openFDs(), rss.Of(os.Getpid())
	slots := make(chan struct{}, inflight)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			t := time.Now()
			stops[i], errs[i] = start(ctx)
			took[i] = time.Since(t)
		})
	}
	wg.Wait()
	closeAll := func() time.Duration {
		t := time.Now()
		var wg sync.WaitGroup
		for _, stop := range stops {
			if stop != nil {
				wg.Go(stop)
			}
		}
		wg.Wait()
		return time.Since(t)
	}
	if err := errors.Join(errs...); err != nil {
		closeAll()
		return Result{}, err
	}
	time.Sleep(rss.Idle) // what ends after a start (the handshake's reader) has ended
	per := func(after, before int64) float64 { return float64(after-before) / float64(max(n-1, 1)) }
	r := Result{
		Goroutines: per(int64(runtime.NumGoroutine()), int64(goroutines0)),
		FDs:        per(int64(openFDs()), int64(fds0)),
		RSSKiB:     per(rss.Of(os.Getpid()), rss0),
	}
	slices.Sort(took)
	r.StartMS = float64(took[n/2]) / 1e6
	cpu := closeCPU(os.Getenv(EnvCPU) == "1")
	r.CloseAllMS = float64(closeAll()) / 1e6
	host, plugins, switches := cpu()
	r.HostCloseCPUMS, r.PluginCloseCPUMS = float64(host)/1e6, float64(plugins)/1e6/float64(n)
	r.PluginCloseSwitches = float64(switches) / float64(n)
	return r, nil
}

// openFDs is how many file descriptors this process has open.
func openFDs() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries) - 1 // the directory's own, open while it is read
}
