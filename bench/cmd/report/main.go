// Command report runs plugkit's benchmarks (package bench) several times
// in one go test run, takes the median of each figure, compares it with
// its baseline and writes BENCHMARKS.md and bench/results.json. Run it
// from the module root, on a machine as quiet as can be had:
//
//	go run ./bench/cmd/report [-count 5] [-benchtime 1s] [-stream-mib 1024] [-proc-runs 21]
//
// Besides the go test benchmarks it times whole processes itself
// (process.go): each binary's floor, run until it exits from a shell's
// point of view, and the whole `plugkit inspect` against a go-plugin host
// doing the same, interleaved, the medians of -proc-runs runs.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	count := flag.Int("count", 5, "runs of every benchmark; figures are the medians")
	benchtime := flag.String("benchtime", "1s", "go test -benchtime")
	streamMiB := flag.Int("stream-mib", 1024, "MiB per streaming operation (1 MiB chunks)")
	pattern := flag.String("bench", ".", "go test -bench pattern")
	md := flag.String("md", "BENCHMARKS.md", "report to write")
	jsonOut := flag.String("json", "bench/results.json", "results to write")
	rawOut := flag.String("raw", "bench/bench.txt", "raw go test output to keep")
	timeout := flag.Duration("timeout", 90*time.Minute, "deadline of the whole run")
	procRuns := flag.Int("proc-runs", 21, "runs of each whole-process figure (floors, plugkit inspect), interleaved; 0 skips them")
	from := flag.String("from", "", "re-render the reports from this saved go test output instead of running the benchmarks (machine lines describe this machine now)")
	flag.Parse()
	if *from != "" {
		raw, err := os.ReadFile(*from)
		if err != nil {
			fail(err)
		}
		m := machineInfo()
		m.LoadBefore, m.LoadAfter, m.Duration = "see the original run", "", "?"
		m.Command, m.Count, m.ProcRuns = "go run ./bench/cmd/report", *count, *procRuns
		write(raw, m, *streamMiB, *md, *jsonOut)
		return
	}

	m := machineInfo()
	m.LoadBefore = loadavg()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	// Rounds of -count 1 rather than one -count N run: go test repeats each
	// sub-benchmark N times back to back, so contenders would be measured
	// minutes apart while the machine's load drifts. Round by round, every
	// contender is measured in every stretch of time.
	args := []string{"test", "-run", "^$", "-bench", *pattern, "-count", "1", "-benchtime", *benchtime, "-timeout", timeout.String(), "./bench/"}
	var out bytes.Buffer
	started := time.Now()
	if *procRuns > 0 {
		fmt.Fprintf(os.Stderr, "whole processes: %d interleaved runs of each of %d commands\n", *procRuns, len(procCases))
		lines, err := timeProcesses(ctx, *procRuns)
		if err != nil {
			fail(err)
		}
		out.Write(lines)
	}
	for round := 1; round <= *count; round++ {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Env = append(os.Environ(), fmt.Sprintf("BENCH_STREAM_MIB=%d", *streamMiB))
		cmd.Stdout = io.MultiWriter(&out, os.Stderr)
		cmd.Stderr = os.Stderr
		fmt.Fprintf(os.Stderr, "round %d of %d: go %s\n", round, *count, strings.Join(args, " "))
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "report: the benchmarks failed:", err)
			os.Exit(1)
		}
	}
	m.LoadAfter = loadavg()
	m.Duration = time.Since(started).Round(time.Second).String()
	m.Command = "go run ./bench/cmd/report " + strings.Join(os.Args[1:], " ")
	m.Count, m.ProcRuns = *count, *procRuns
	if err := os.WriteFile(*rawOut, out.Bytes(), 0o644); err != nil {
		fail(err)
	}
	write(out.Bytes(), m, *streamMiB, *md, *jsonOut)
}

// write turns go test output into the two reports.
func write(raw []byte, m machine, streamMiB int, md, jsonOut string) {
	figs := figures(parse(raw), streamMiB)
	data, err := json.MarshalIndent(figs, "", "  ")
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(jsonOut, append(data, '\n'), 0o644); err != nil {
		fail(err)
	}
	if err := os.WriteFile(md, []byte(withKept(markdown(m, figs, streamMiB), md)), 0o644); err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "wrote %s and %s\n", md, jsonOut)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "report:", err)
	os.Exit(1)
}

// samples maps "Benchmark/sub" and a unit to the values of every run.
type samples map[string]map[string][]float64

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

func parse(out []byte) samples {
	s := samples{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		mt := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if mt == nil {
			continue
		}
		name := strings.TrimPrefix(mt[1], "Benchmark")
		f := strings.Fields(mt[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			if s[name] == nil {
				s[name] = map[string][]float64{}
			}
			s[name][f[i+1]] = append(s[name][f[i+1]], v)
		}
	}
	return s
}

// median returns the median of one benchmark's metric, NaN when absent.
func (s samples) median(name, unit string) float64 {
	v := append([]float64(nil), s[name][unit]...)
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func (s samples) runs(name, unit string) int { return len(s[name][unit]) }

// spread is (max - min) / median of one benchmark's metric: how far apart
// the runs of one contender are.
func (s samples) spread(name, unit string) float64 {
	v := s[name][unit]
	if len(v) < 2 {
		return 0
	}
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return (hi - lo) / s.median(name, unit)
}

// Figure is one line of the report and one entry of results.json.
type Figure struct {
	Name     string   `json:"name"`
	Plugkit  float64  `json:"plugkit"`
	Baseline float64  `json:"baseline"`
	Ratio    float64  `json:"ratio"`
	Unit     string   `json:"unit"`
	GoPlugin *float64 `json:"goplugin,omitempty"`
	// BaselineIs names what the baseline is.
	BaselineIs string `json:"baseline_is"`
	Goal       string `json:"goal"`
	// Met is nil for figures that are only reported.
	Met  *bool `json:"met,omitempty"`
	Runs int   `json:"runs"`
	// Spread is the larger of plugkit's and the baseline's (max-min)/median
	// across runs: a ratio closer to 1 than this is within the noise.
	Spread float64 `json:"spread"`
}

func figures(s samples, streamMiB int) []Figure {
	b := &figureSet{s: s}
	b.floors()
	b.coldStart()
	for _, tls := range []string{"", "-mtls"} {
		b.transport(tls, streamMiB)
	}
	b.remote()
	b.telemetry()
	b.discoveryAndMemory()
	b.scale()
	b.wasmStart()
	return b.figs
}

// wasmStart adds a WebAssembly guest's first answer with a warm compile
// cache (BenchmarkWasmColdStart), when it was measured: the guest built
// with -buildmode=c-shared, started from its snapshot, against the goal
// of 10 ms, and against the same plugin started as a process.
func (b *figureSet) wasmStart() {
	s := b.s
	const snap, native = "WasmColdStart/snapshot", "WasmColdStart/native"
	if s.runs(snap, "ms-to-first-answer") == 0 {
		return
	}
	runs := s.runs(snap, "ms-to-first-answer")
	first := s.median(snap, "ms-to-first-answer")
	b.add(Figure{Name: "wasm_first_answer", Unit: "ms", Plugkit: first, Baseline: 10, BaselineIs: "the goal, 10 ms",
		Goal: "<= 10 ms", Runs: runs, Spread: b.spread("ms-to-first-answer", snap)}, atMost(1))
	b.add(Figure{Name: "wasm_first_answer_vs_native", Unit: "ms", Plugkit: first, Baseline: s.median(native, "ms-to-first-answer"),
		BaselineIs: "the same plugin as a process (native)", Goal: "reported", Runs: runs,
		Spread: b.spread("ms-to-first-answer", snap, native)}, nil)
}

// scale adds the figures of many plugins at once (BenchmarkScale), when
// they were measured: the start of one plugin and the close of them all
// against go-plugin's host in the same iterations, and what each plugin
// costs its host against the goals.
func (b *figureSet) scale() {
	s := b.s
	const name = "Scale"
	if s.runs(name, "plugkit-close-ms") == 0 {
		return
	}
	runs := s.runs(name, "plugkit-close-ms")
	const shape = "go-plugin v1.8.0 host (bench/testdata/gpscale), same iterations"
	vs := func(fig, metric, unit, goal string, limit float64) {
		b.add(Figure{Name: fig, Unit: unit, Plugkit: s.median(name, "plugkit-"+metric), Baseline: s.median(name, "goplugin-"+metric),
			BaselineIs: shape, Goal: goal, Runs: runs,
			Spread: math.Max(b.spread("plugkit-"+metric, name), b.spread("goplugin-"+metric, name))}, atMost(limit))
	}
	vs("scale_300_start", "start-ms", "ms", "<= 1x go-plugin (keep ahead)", 1)
	vs("scale_300_close_all", "close-ms", "ms", "<= 0.8x go-plugin", 0.8)
	// What a host keeps once for all its plugins (the thread they are
	// forked from, the lock of their socket directories) is 1/300 of one
	// per plugin: counts to two decimals.
	perPlugin := func(fig, metric, unit string, goal float64) {
		b.add(Figure{Name: fig, Unit: unit, Plugkit: round(s.median(name, "plugkit-"+metric), 2), Baseline: goal,
			GoPlugin: gp(s.median(name, "goplugin-"+metric)), BaselineIs: fmt.Sprintf("the goal, %g", goal),
			Goal: fmt.Sprintf("<= %g", goal), Runs: runs}, atMost(1))
	}
	perPlugin("scale_goroutines_per_plugin", "goroutines", "goroutines", 8)
	perPlugin("scale_fds_per_plugin", "fds", "fds", 4)
	vs("scale_rss_per_plugin", "rss-KiB", "KiB", "<= 1.1x go-plugin", 1.1)
}

// telemetry adds the cost of observability (BenchmarkTelemetry), when it
// was measured: telemetry without a TracerProvider against the zero
// Telemetry, and tracing every call against grpc-go with otelgrpc on
// both sides.
func (b *figureSet) telemetry() {
	s := b.s
	const pre = "Telemetry/16B/"
	if s.runs(pre+"plugkit", "ns/op") == 0 {
		return
	}
	b.add(Figure{Name: "unary_16B_no_tracer", Unit: "µs/call", Plugkit: b.us(pre + "plugkit-events-only"), Baseline: b.us(pre + "plugkit"),
		BaselineIs: "plugkit, zero Telemetry", Goal: "<= 1.01x", Runs: s.runs(pre+"plugkit-events-only", "ns/op"),
		Spread: b.spread("ns/op", pre+"plugkit-events-only", pre+"plugkit")}, atMost(1.01))
	b.add(Figure{Name: "unary_16B_traced", Unit: "µs/call", Plugkit: b.us(pre + "plugkit-traced"), Baseline: b.us(pre + "raw-otelgrpc"),
		BaselineIs: "grpc-go, otelgrpc both sides", Goal: "<= 1.15x grpc-go+otelgrpc", Runs: s.runs(pre+"plugkit-traced", "ns/op"),
		Spread: b.spread("ns/op", pre+"plugkit-traced", pre+"raw-otelgrpc")}, atMost(1.15))
}

// figureSet gathers the report's figures from one set of samples.
type figureSet struct {
	s    samples
	figs []Figure
}

// add rounds f, computes its ratio unless f has one (paired in the
// benchmark) and, when check is set, whether the goal is met, and
// appends it.
func (b *figureSet) add(f Figure, check func(r float64) bool) {
	if f.Ratio != 0 {
		f.Ratio = round(f.Ratio, 3)
	} else if f.Baseline != 0 && !math.IsNaN(f.Baseline) {
		f.Ratio = round(f.Plugkit/f.Baseline, 3)
	}
	if check != nil && !math.IsNaN(f.Ratio) {
		met := check(f.Ratio)
		f.Met = &met
	}
	f.Plugkit, f.Baseline = round(f.Plugkit, 3), round(f.Baseline, 3)
	b.figs = append(b.figs, f)
}

// gp is an optional go-plugin figure: nil when it was not measured.
func gp(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	r := round(v, 3)
	return &r
}

// spread is the largest spread of the named benchmarks in unit.
func (b *figureSet) spread(unit string, names ...string) float64 {
	m := 0.0
	for _, n := range names {
		m = math.Max(m, b.s.spread(n, unit))
	}
	return round(m, 3)
}

func (b *figureSet) ms(name string) float64 { return b.s.median(name, "ns/op") / 1e6 }
func (b *figureSet) us(name string) float64 { return b.s.median(name, "ns/op") / 1e3 }

func atMost(limit float64) func(float64) bool  { return func(r float64) bool { return r <= limit } }
func atLeast(limit float64) func(float64) bool { return func(r float64) bool { return r >= limit } }

// floors adds the whole-process figures the report times itself
// (process.go), when it timed them: each binary's floor, and the whole
// plugkit inspect against the sum of the two floors and against go-plugin.
func (b *figureSet) floors() {
	s := b.s
	const pre = "Process/"
	runs := s.runs(pre+"inspect/plugkit", "ns/op")
	if runs == 0 {
		return
	}
	plugin, cli := b.ms(pre+"floor/pkplugin"), b.ms(pre+"floor/plugkit")
	b.add(Figure{Name: "floor_plugin", Unit: "ms", Plugkit: plugin, BaselineIs: "none: the plugin binary run without its cookie until it exits",
		Goal: "reported", Runs: s.runs(pre+"floor/pkplugin", "ns/op"), Spread: b.spread("ns/op", pre+"floor/pkplugin")}, nil)
	b.add(Figure{Name: "floor_plugkit_cli", Unit: "ms", Plugkit: cli, BaselineIs: "none: plugkit run with an unknown command",
		Goal: "reported", Runs: s.runs(pre+"floor/plugkit", "ns/op"), Spread: b.spread("ns/op", pre+"floor/plugkit")}, nil)
	b.add(Figure{Name: "inspect_vs_floors", Unit: "ms", Plugkit: b.ms(pre + "inspect/plugkit"), Baseline: plugin + cli,
		GoPlugin: gp(b.ms(pre + "inspect/goplugin")), BaselineIs: "floor_plugin + floor_plugkit_cli", Goal: "<= 2x floors", Runs: runs,
		Spread: b.spread("ns/op", pre+"inspect/plugkit", pre+"floor/pkplugin", pre+"floor/plugkit")}, atMost(2))
	b.add(Figure{Name: "inspect_vs_goplugin", Unit: "ms", Plugkit: b.ms(pre + "inspect/plugkit"), Baseline: b.ms(pre + "inspect/goplugin"),
		BaselineIs: "go-plugin v1.8.0 host (bench/testdata/gpinspect)", Goal: "<= 0.4x go-plugin", Runs: runs,
		Spread: b.spread("ns/op", pre+"inspect/plugkit", pre+"inspect/goplugin")}, atMost(0.4))
}

// startClose adds host.Start's and Close's figures beside the floor
// measured in the same iterations (BenchmarkStartClose), when measured.
func (b *figureSet) startClose() {
	s := b.s
	const name = "StartClose"
	if s.runs(name, "start-ms") == 0 {
		return
	}
	floor := s.median(name, "floor-ms")
	b.add(Figure{Name: "start_to_first_call_automtls", Unit: "ms", Plugkit: s.median(name, "start-ms"), Baseline: floor + 2,
		BaselineIs: fmt.Sprintf("floor + 2 ms (floor %.2f ms, same iterations)", floor), Goal: "<= floor + 2 ms", Runs: s.runs(name, "start-ms"),
		Spread: b.spread("start-ms", name)}, atMost(1))
	b.add(Figure{Name: "close_cooperative", Unit: "ms", Plugkit: s.median(name, "close-ms"), Baseline: 2,
		BaselineIs: "the goal, 2 ms", Goal: "<= 2 ms", Runs: s.runs(name, "close-ms"), Spread: b.spread("close-ms", name)}, atMost(1))
}

func (b *figureSet) coldStart() {
	s := b.s
	b.startClose()
	b.add(Figure{Name: "cold_start_automtls", Unit: "ms", Plugkit: b.ms("ColdStartTLS/plugkit"), Baseline: b.ms("ColdStartTLS/goplugin"),
		BaselineIs: "go-plugin v1.8.0", Goal: "<= 0.25x go-plugin", Runs: s.runs("ColdStartTLS/plugkit", "ns/op"),
		Spread: b.spread("ns/op", "ColdStartTLS/plugkit", "ColdStartTLS/goplugin")}, atMost(0.25))
	b.add(Figure{Name: "cold_start_plain", Unit: "ms", Plugkit: b.ms("ColdStartPlain/plugkit"), Baseline: b.ms("ColdStartPlain/floor"),
		GoPlugin: gp(b.ms("ColdStartPlain/goplugin")), BaselineIs: "floor: the same binary run until it exits, in the test process",
		Goal: "<= 1.5x floor", Runs: s.runs("ColdStartPlain/plugkit", "ns/op"), Spread: b.spread("ns/op", "ColdStartPlain/plugkit", "ColdStartPlain/floor")}, atMost(1.5))
}

// transport adds the unary, streaming and concurrent figures, in plain
// text (tls "") or with mutual TLS (tls "-mtls").
func (b *figureSet) transport(tls string, streamMiB int) {
	s := b.s
	suffix := strings.ReplaceAll(tls, "-", "_")
	goplugin := func(string) *float64 { return nil }
	if tls != "" {
		goplugin = func(v string) *float64 { return gp(b.us(v)) }
	}
	for _, size := range []string{"16B", "64KiB", "1MiB"} {
		pre := "Unary/" + size + "/"
		b.add(Figure{Name: "unary_" + size + suffix, Unit: "µs/call", Plugkit: b.us(pre + "plugkit" + tls), Baseline: b.us(pre + "raw" + tls),
			GoPlugin: goplugin(pre + "goplugin-mtls"), BaselineIs: "grpc-go" + tls, Goal: "<= 1.05x grpc-go", Runs: s.runs(pre+"plugkit"+tls, "ns/op"),
			Spread: b.spread("ns/op", pre+"plugkit"+tls, pre+"raw"+tls)}, atMost(1.05))
	}
	var gpStream *float64
	if tls != "" {
		gpStream = gp(s.median("Stream/goplugin-mtls", "MB/s"))
	}
	b.add(Figure{Name: fmt.Sprintf("stream_%s%s", sizeName(streamMiB), suffix), Unit: "MB/s", Plugkit: s.median("Stream/plugkit"+tls, "MB/s"),
		Baseline: s.median("Stream/raw"+tls, "MB/s"), GoPlugin: gpStream, BaselineIs: "grpc-go" + tls, Goal: ">= 0.9x grpc-go",
		Runs: s.runs("Stream/plugkit"+tls, "MB/s"), Spread: b.spread("MB/s", "Stream/plugkit"+tls, "Stream/raw"+tls)}, atLeast(0.9))
	for _, callers := range []string{"16", "256"} {
		pre := "Concurrent/" + callers + "/"
		var gpc *float64
		if tls != "" {
			gpc = gp(s.median(pre+"goplugin-mtls", "calls/s"))
		}
		b.add(Figure{Name: "concurrent_" + callers + suffix, Unit: "calls/s", Plugkit: s.median(pre+"plugkit"+tls, "calls/s"),
			Baseline: s.median(pre+"raw"+tls, "calls/s"), GoPlugin: gpc, BaselineIs: "grpc-go" + tls, Goal: ">= 0.95x grpc-go",
			Runs: s.runs(pre+"plugkit"+tls, "calls/s"), Spread: b.spread("calls/s", pre+"plugkit"+tls, pre+"raw"+tls)}, atLeast(0.95))
	}
}

// remote adds a plugin service's figures (PLUGKIT_LISTEN, host.Dial)
// against grpc-go with the same mutual TLS, across one veth pair between
// namespaces, when they were measured (BenchmarkRemote: interleaved
// blocks, several processes a contender). The ratio is the median of the
// runs' paired ratios (each the median over its rounds), and the spread
// that ratio's across runs; grpc-go's client to plugkit's service is
// reported beside, to tell the host's part from the service's, and the
// CPU time of plugkit's and grpc-go's service processes per op.
func (b *figureSet) remote() {
	s := b.s
	for _, r := range []struct {
		name, bench, unit, metric, cpu, goal string
		check                                func(float64) bool
	}{
		{"remote_unary_16B_mtls", "Remote/unary_16B", "µs/call", "us", "us/call", "<= 1.05x grpc-go", atMost(1.05)},
		{"remote_stream_mtls", "Remote/stream", "MB/s", "MB/s", "us/MiB", ">= 0.95x grpc-go", atLeast(0.95)},
	} {
		runs := s.runs(r.bench, "ratio")
		if runs == 0 {
			continue
		}
		grpcGo := s.median(r.bench, "grpc-go-"+r.metric)
		b.add(Figure{Name: r.name, Unit: r.unit, Plugkit: s.median(r.bench, "plugkit-"+r.metric), Baseline: grpcGo,
			Ratio: s.median(r.bench, "ratio"), BaselineIs: "grpc-go-mtls over the same veth, interleaved", Goal: r.goal, Runs: runs,
			Spread: b.spread("ratio", r.bench)}, r.check)
		b.add(Figure{Name: r.name + "_service", Unit: r.unit, Plugkit: s.median(r.bench, "grpc-go-to-service-"+r.metric), Baseline: grpcGo,
			BaselineIs: "grpc-go-mtls; plugkit's service called by grpc-go's client", Goal: "reported", Runs: runs}, nil)
		b.add(Figure{Name: r.name + "_service_cpu", Unit: "CPU " + strings.Replace(r.cpu, "us", "µs", 1), Plugkit: s.median(r.bench, "plugkit-service-cpu-"+r.cpu),
			Baseline: s.median(r.bench, "grpc-go-service-cpu-"+r.cpu), BaselineIs: "grpc-go-mtls: the service processes' CPU time", Goal: "reported", Runs: runs}, nil)
	}
}

// discoveryAndMemory adds the manager's discovery figures and the
// resident memory of host and plugin.
func (b *figureSet) discoveryAndMemory() {
	s := b.s
	b.add(Figure{Name: "manager_discover_100_cold", Unit: "ms", Plugkit: b.ms("ManagerDiscover/cold"), Baseline: b.ms("ManagerDiscover/floor"),
		BaselineIs: fmt.Sprintf("floor: hash each distinct file once and run the 100 binaries until they exit, %d at a time", runtime.NumCPU()),
		Goal:       "<= 1.3x floor", Runs: s.runs("ManagerDiscover/cold", "ns/op"),
		Spread: b.spread("ns/op", "ManagerDiscover/cold", "ManagerDiscover/floor")}, atMost(1.3))
	warmLaunches := s.median("ManagerDiscover/warm", "launches")
	b.add(Figure{Name: "manager_discover_100_warm", Unit: "ms", Plugkit: b.ms("ManagerDiscover/warm"), Baseline: 50,
		BaselineIs: "the goal, 50 ms", Goal: fmt.Sprintf("0 launches (%v), < 50 ms", warmLaunches), Runs: s.runs("ManagerDiscover/warm", "ns/op")},
		func(r float64) bool { return r < 1 && warmLaunches == 0 })
	kib := func(name, unit string) float64 { return s.median(name, unit) / 1024 }
	for _, part := range []string{"total", "host"} {
		b.add(Figure{Name: "rss_" + part, Unit: "MiB", Plugkit: kib("RSS/plugkit", part+"-KiB"), Baseline: kib("RSS/goplugin", part+"-KiB"),
			BaselineIs: "go-plugin v1.8.0", Goal: "reported", Runs: s.runs("RSS/plugkit", part+"-KiB")}, nil)
	}
	b.add(Figure{Name: "rss_plugin", Unit: "MiB", Plugkit: kib("RSS/plugkit", "plugin-KiB"), Baseline: kib("RSS/raw", "plugin-KiB"),
		GoPlugin: gp(kib("RSS/goplugin", "plugin-KiB")), BaselineIs: "grpc-go-mtls: the same echo service on bare grpc-go",
		Goal: "<= 1.1x grpc-go", Runs: s.runs("RSS/plugkit", "plugin-KiB"), Spread: b.spread("plugin-KiB", "RSS/plugkit", "RSS/raw")}, atMost(1.1))
}

func sizeName(mib int) string {
	if mib%1024 == 0 {
		return fmt.Sprintf("%dGiB", mib/1024)
	}
	return fmt.Sprintf("%dMiB", mib)
}

func round(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// machine describes where the figures were taken.
type machine struct {
	CPUs                  int
	CPU                   string
	Go                    string
	GoPlugin, GRPC        string
	Kernel                string
	LoadBefore, LoadAfter string
	Date                  string
	Duration              string
	Command               string
	Count                 int
	// ProcRuns is how many runs each whole-process figure took.
	ProcRuns int
}

func machineInfo() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), Date: time.Now().UTC().Format("2006-01-02 15:04 MST")}
	if out, err := exec.Command("nproc").Output(); err == nil {
		m.CPUs, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		m.Go = strings.TrimSpace(string(out))
	}
	mod := func(path string) string {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", path).Output()
		if err != nil {
			return "?"
		}
		return strings.TrimSpace(string(out))
	}
	m.GoPlugin, m.GRPC = mod("github.com/hashicorp/go-plugin"), mod("google.golang.org/grpc")
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	return m
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
