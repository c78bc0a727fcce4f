package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/wasmhost"
)

// The WebAssembly benchmarks (issue 29) set the echo plugin built for
// wasip1 beside the same plugin native:
//
//	go test -run XXX -bench Wasm ./bench/
//
// BENCH_IDLE sets how long BenchmarkWasmIdle watches an idle guest
// (default 10s).

// wasmBuild holds the echo plugin built for wasip1, and a compilation
// cache holding its compiled form.
var wasmBuild struct {
	once        sync.Once
	path, cache string
	module      []byte
	reactor     string // the plugin built with -buildmode=c-shared
	err         error
}

// echoWasm builds the echo plugin for wasip1 once, and fills the cache.
func echoWasm(b *testing.B) (path, cache string) {
	b.Helper()
	wasmBuild.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		wasmBuild.path = filepath.Join(bin.dir, "pkplugin.wasm")
		wasmBuild.cache = filepath.Join(bin.dir, "wasm-cache")
		if wasmBuild.err = testutil.BuildWasm(ctx, wasmBuild.path, "./testdata/pkplugin"); wasmBuild.err != nil {
			return
		}
		if wasmBuild.module, wasmBuild.err = os.ReadFile(wasmBuild.path); wasmBuild.err != nil {
			return
		}
		wasmBuild.reactor = filepath.Join(bin.dir, "pkplugin-reactor.wasm")
		if wasmBuild.err = testutil.BuildWasmReactor(ctx, wasmBuild.reactor, "./testdata/pkplugin"); wasmBuild.err != nil {
			return
		}
		// The bench's own modules: a first compile may take minutes on a
		// loaded machine.
		rt := wasmhost.New(wasmhost.Config{CacheDir: wasmBuild.cache, CacheBytes: testutil.WasmCacheBytes, CompileTimeout: 15 * time.Minute})
		defer rt.Close(ctx)
		if wasmBuild.err = rt.Compile(ctx, wasmBuild.module); wasmBuild.err != nil {
			return
		}
		wasmBuild.err = rt.CompileFile(ctx, wasmBuild.reactor)
	})
	if wasmBuild.err != nil {
		b.Fatal(wasmBuild.err)
	}
	return wasmBuild.path, wasmBuild.cache
}

// startWasm starts the echo guest with rt and makes its first call.
func startWasm(ctx context.Context, b *testing.B, rt *wasmhost.Runtime) *host.Client {
	path, _ := echoWasm(b)
	return startModule(ctx, b, rt, path)
}

// startModule starts the echo guest in the module at path with rt and
// makes its first call.
func startModule(ctx context.Context, b *testing.B, rt *wasmhost.Runtime, path string) *host.Client {
	c, err := host.Start(ctx, host.Command{Path: path, Cookie: echo.Cookie, Runner: rt, Env: guestEnv()}, host.Options{Versions: []int{1}, Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := echo.Echo(ctx, c.Conn(), []byte("first")); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkWasmColdStart: start to first answer (ms-to-first-answer),
// then Close (in ns/op too). cold: a new
// Runtime without a cache each time (the compile included); cached: a new
// Runtime over the compilation cache; warm: one Runtime (the module
// compiled in memory); snapshot: the plugin built with -buildmode=c-shared
// in one Runtime, which starts it from its snapshot after the first;
// interpreted: a new interpreting Runtime; native: the same plugin as a
// process (plaintext, as the guest).
func BenchmarkWasmColdStart(b *testing.B) {
	_, cache := echoWasm(b)
	ctx := ctxFor(b, 30*time.Minute)
	for _, bc := range []struct {
		name string
		cfg  *wasmhost.Config // nil: one Runtime for all iterations
		path string           // the module; "": wasmBuild.path
	}{
		{"cold", &wasmhost.Config{}, ""},
		{"cached", &wasmhost.Config{CacheDir: cache, CacheBytes: testutil.WasmCacheBytes}, ""},
		{"warm", nil, ""},
		{"snapshot", nil, wasmBuild.reactor},
		{"interpreted", &wasmhost.Config{Interpret: true}, ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			path := bc.path
			if path == "" {
				path = wasmBuild.path
			}
			shared := wasmhost.New(wasmhost.Config{CacheDir: cache, CacheBytes: testutil.WasmCacheBytes, SnapshotBytes: wasmhost.DefaultSnapshotBytes})
			defer shared.Close(ctx)
			if err := shared.CompileFile(ctx, path); err != nil {
				b.Fatal(err)
			}
			if bc.cfg == nil { // the first start runs the inits and takes the snapshot
				startModule(ctx, b, shared, path).Close()
			}
			var first time.Duration
			cpu0, haveCPU := cpuTime()
			for b.Loop() {
				rt := shared
				if bc.cfg != nil {
					rt = wasmhost.New(*bc.cfg)
				}
				t0 := time.Now()
				c := startModule(ctx, b, rt, path)
				first += time.Since(t0)
				c.Close()
				if bc.cfg != nil {
					rt.Close(ctx)
				}
			}
			b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "ms-to-first-answer")
			if cpu1, _ := cpuTime(); haveCPU {
				// The guest runs in this process: its CPU, and the host's,
				// start to Close (less sensitive to a loaded machine than
				// the time).
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			}
		})
	}
	b.Run("native", func(b *testing.B) {
		var first time.Duration
		for b.Loop() {
			t0 := time.Now()
			cc, stop, err := startPlugkit(ctx, false)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := echo.Echo(ctx, cc, []byte("first")); err != nil {
				b.Fatal(err)
			}
			first += time.Since(t0)
			stop()
		}
		b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "ms-to-first-answer")
	})
}

// BenchmarkWasmUnary: one 16 B echo, one at a time and from 8 callers at
// once (throughput: ops/s is 1e9 / ns/op), against the guest and the same
// plugin native (plaintext).
func BenchmarkWasmUnary(b *testing.B) {
	_, cache := echoWasm(b)
	ctx := ctxFor(b, 30*time.Minute)
	rt := wasmhost.New(wasmhost.Config{CacheDir: cache, CacheBytes: testutil.WasmCacheBytes})
	defer rt.Close(ctx)
	guest := startWasm(ctx, b, rt)
	defer guest.Close()
	native, stop, err := startPlugkit(ctx, false)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	payload := make([]byte, 16)
	for _, c := range []struct {
		name string
		cc   grpc.ClientConnInterface
	}{{"wasm", guest.Conn()}, {"native", native}} {
		b.Run("serial/"+c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := echo.Echo(ctx, c.cc, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("parallel8/"+c.name, func(b *testing.B) {
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := echo.Echo(ctx, c.cc, payload); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkWasmIdle: the host process's CPU while one guest idles,
// connected, for BENCH_IDLE (default 10 s), as a percentage of one core
// (idle-cpu-%); and the memory one more idle guest costs the host
// (heap and stacks after a collection: MiB/guest, over 8 guests).
func BenchmarkWasmIdle(b *testing.B) {
	_, cache := echoWasm(b)
	ctx := ctxFor(b, 30*time.Minute)
	idle := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv("BENCH_IDLE")); err == nil && d > 0 {
		idle = d
	}
	rt := wasmhost.New(wasmhost.Config{CacheDir: cache, CacheBytes: testutil.WasmCacheBytes})
	defer rt.Close(ctx)
	b.Run("cpu", func(b *testing.B) {
		if _, ok := cpuTime(); !ok {
			b.Skip("no getrusage on this system")
		}
		for b.Loop() {
			c := startWasm(ctx, b, rt)
			time.Sleep(time.Second) // the start's own work settles
			before, _ := cpuTime()
			time.Sleep(idle)
			after, _ := cpuTime()
			used := after - before
			c.Close()
			b.ReportMetric(100*used.Seconds()/idle.Seconds(), "idle-cpu-%")
		}
	})
	b.Run("memory", func(b *testing.B) {
		const n = 8
		for b.Loop() {
			startWasm(ctx, b, rt).Close() // the module compiled and loaded
			before := testutil.UsedMemory()
			var cs []*host.Client
			for range n {
				cs = append(cs, startWasm(ctx, b, rt))
			}
			after := testutil.UsedMemory()
			for _, c := range cs {
				c.Close()
			}
			b.ReportMetric(float64(after-before)/n/(1<<20), "MiB/guest")
		}
	})
}

// guestEnv is BENCH_GUEST_ENV (space-separated NAME=value pairs, such as
// GOGC=400), given to the guests.
func guestEnv() []string { return strings.Fields(os.Getenv("BENCH_GUEST_ENV")) }
