package main

// notes explains, for figures whose goal a run misses, what bounds them;
// a key ending in "*" covers every figure with that prefix. They come
// from profiles of this machine (see BENCHMARKS.md) and are printed only
// for the figures a run misses.
var notes = map[string]string{
	"cold_start_automtls": "bounded by the process itself, not by plugkit. The floor (fork+exec of the same binary and the Go " +
		"runtime's start and exit, cold_start_plain's baseline) is already more than 0.25x go-plugin's whole cold start on this " +
		"machine, so no host library can reach 0.25x here: go-plugin's start is floor + its P-521 keys and its own handshake " +
		"(~20 ms on this CPU). What plugkit adds over the floor is the difference " +
		"between the two cold-start rows plus its P-256 key pair and TLS handshake (cold_start_automtls - cold_start_plain). " +
		"On a quieter moment the same day (-bench 'ColdStart(TLS|Plain)/plugkit' -count 3 -benchtime 30x) plugkit took " +
		"26.5 ms with AutoMTLS and 23.0 ms without: AutoMTLS costs plugkit ~3.5 ms, the rest is the process. " +
		"A CPU profile of the host (go test -bench ColdStartTLS/plugkit -cpuprofile) is dominated by fork/exec and waiting for " +
		"the child; the plugin's own time is Go runtime start-up, package init (grpc, protobuf registries) and key generation.",
	"unary_*": "the same grpc-go on both sides: plugkit adds no code to the data path (its connection is a plain " +
		"*grpc.ClientConn; the broker and stdio streams are idle). A miss of a few percent is the noise of a 2-CPU machine " +
		"shared with other work (see the load averages and the spread), where host, plugin and the benchmark share two cores.",
	"stream_*":         "as unary_*: identical grpc-go transports; differences are scheduling noise on 2 shared CPUs.",
	"unary_64KiB_mtls": mtlsNote, "unary_1MiB_mtls": mtlsNote, "stream_1GiB_mtls": mtlsNote, "stream_256MiB_mtls": mtlsNote,
	"concurrent_16_mtls": mtlsNote, "concurrent_256_mtls": mtlsNote,
	"manager_discover_100_cold": "bounded by the launches, each a whole plugin start: the host's part of host.Start (a socket directory, " +
		"a P-256 key pair and certificate, fork/exec, the TLS 1.3 handshake, the HTTP/2 connection), the plugin's start beyond the floor " +
		"(its key pair, its side of the handshake, serving Describe) and Close (Shutdown, exit, reap); " +
		"the floor has none of these. Hashing is no longer a part: the 100 paths reach one file, hashed once (same device, inode, " +
		"size and mtime), while others launch. A profile of Discover (perf across both processes, 2 CPUs) put ~70% of the CPU in the " +
		"plugins (~half of it exec, page faults and package init, as in the floor; TLS handshake, key generation and gRPC serving the rest) " +
		"and ~30% in the host (host.Start: TLS handshake, MkdirTemp of the socket directory, key pair; one SHA-256). " +
		"Two launches per CPU fill the time a launch waits on its plugin. Measured in pairs of the same run (2 shared CPUs): " +
		"5-10x the floor before (every path hashed, 100 x 22 MB), 2.6x with one hash per file, 2.1-2.2x with two launches per CPU. It is CPU-bound: a cold Discover took ~1.0 CPU-second " +
		"(host and plugins, user+sys) against ~0.5 for the floor's 100 runs, so 1.3x needs each launch's work beyond the process " +
		"itself (both sides) under ~1.5 ms of CPU, against ~5 ms now. What is left to cut is in host.Start and the plugin's " +
		"start (cold_start_*), not in the manager.",
	"rss_plugin": "the difference is the plugin's linked code more than its heap: on this kernel (6.x, ext4, large folios) a Go " +
		"binary's text is resident whole once it runs (/proc/PID/smaps: 6.5 of 6.6 MB of the plugin's text, 5.5 of 5.6 MB of " +
		"grpc-go's), so every linked package costs its size in RSS whether it runs or not. Until the trace SDK and the span exporters " +
		"of the OTEL_* environment became opt-in (plugin/traceexport: otlptracegrpc, otlptracehttp, stdouttrace, the OTLP protos, " +
		"grpc-gateway and more of net/http, ~1.5 MB of a 3.6 MB larger binary) the plugin measured 1.16x grpc-go; without them " +
		"1.07x-1.10x in the same runs. What is left (~0.45 MB of text, 0.3 MB of rodata, 0.55 MB of anonymous memory): reflection and health, the broker (yamux) and stdio services, the handshake code, and " +
		"~0.6 MB more anonymous memory (more goroutines and init allocations; no GC has run when idle, in either). A forced GC and " +
		"scavenge after start-up made RSS larger, not smaller (the GC's own pages).",
	"concurrent_*": "as unary_*: identical grpc-go transports; with 16-256 callers on 2 CPUs the figure is bound by CPU and scheduling, and varies by several percent between runs.",
}

// mtlsNote explains the -mtls data-path figures.
const mtlsNote = "plugkit's data path is grpc-go's, with the same TLS 1.3 (AES-GCM) as the baseline: plugkit's connection " +
	"is a plain *grpc.ClientConn and adds no code per call. On a quiet machine (load < 1.7, -count 4, 256 MiB streams) the " +
	"-mtls rows measured within the goals: 1 MiB unary 0.98x, stream 1.07x, 16 and 256 callers 0.99x and 0.98x of grpc-go " +
	"with mutual TLS. A miss here is the 2-CPU machine's noise, where host, plugin and benchmark share two cores."

// about describes every figure.
var about = []string{
	"**cold_start_automtls**: `host.Start` (AutoMTLS on) until the first echo call is answered, against go-plugin's " +
		"`NewClient`+`Client`+`Dispense` and the same call, both with their default AutoMTLS. Stopping the plugin is not timed.",
	"**cold_start_plain**: the same without TLS, against the floor: running the same plugkit plugin binary without its cookie, " +
		"so that it starts, prints that it is a plugin and exits. The go-plugin column is go-plugin without TLS.",
	"**unary_SIZE**: one echo round trip of SIZE bytes each way on a warm connection; `-mtls` with AutoMTLS against grpc-go with " +
		"the same mutual TLS. Bound by grpc-go's framing and copies, and by the unix socket.",
	"**stream_SIZE**: the plugin streams SIZE in 1 MiB messages to the host. Bound by protobuf and HTTP/2 copies and flow " +
		"control in grpc-go (and by AES-GCM in the `-mtls` rows).",
	"**concurrent_N**: 16-byte echo calls from N goroutines sharing one connection, calls per second.",
	"**manager_discover_100_cold**: `manager.Discover` over 100 symlinks of the example objectstore plugin with an empty cache: " +
		"the one file they reach is hashed once (SHA-256 of a 22 MB binary) and each path is launched for Describe, two per CPU at " +
		"a time. Baseline, its floor in the same run (`ManagerDiscover/floor`): hash each distinct file once and run the 100 " +
		"binaries without their cookie (each starts, says it is a plugin and exits), as jobs of one pool of NumCPU workers, " +
		"without the manager.",
	"**manager_discover_100_warm**: the same with the cache file of an earlier Discover: stat each binary, no hash, no launch.",
	"**rss_total / rss_host / rss_plugin**: resident set of a small host program (`bench/testdata/pkhost`, `gphost`) and its " +
		"plugin after one call and 300 ms idle, both with AutoMTLS. rss_plugin's baseline is the same echo service on bare grpc-go " +
		"(`rawserver`, started and called by `rawhost` in the same way): one service, the same mutual TLS with a fresh P-256 key " +
		"pair on each side, a unix socket, the same grpc-go; the go-plugin column is go-plugin's plugin.",
}
