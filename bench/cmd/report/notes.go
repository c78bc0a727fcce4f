package main

// notes explains, for figures whose goal a run misses, what bounds them;
// a key ending in "*" covers every figure with that prefix. They come
// from profiles of this machine (see BENCHMARKS.md) and are printed only
// for the figures a run misses.
var notes = map[string]string{
	"cold_start_automtls": "go-plugin's cold start is its floor plus a P-521 key pair and handshake; plugkit's is its floor plus the " +
		"steps listed under start_to_first_call_automtls. The floor itself (see floor_plugin) is a third of go-plugin's cold start or " +
		"less here, so 0.25x leaves plugkit less than the floor's own size for its launch, AutoMTLS handshake, gRPC connection and " +
		"health check; those steps are serial by the go-plugin protocol (the host's certificate travels in the plugin's " +
		"environment, the plugin's in its handshake line).",
	"start_to_first_call_automtls": startNote,
	"inspect_vs_floors": "inspect is the two floors plus the AutoMTLS start above the plugin's floor (start_to_first_call_automtls), " +
		"one reflection call and Close (close_cooperative), in that order; see those rows for what bounds each.",
	"close_cooperative": closeNote,
	"wasm_first_answer": "a start from the snapshot, step by step (BENCHMARKS.md, loaded machine): the host's start and instantiating " +
		"the module compiled without its data segments 1.6-2.7 ms; the guest's main to its handshake line 2.1 ms; the health " +
		"check, the guest's first work after its line, 3.5 ms; the first call 1.1 ms, all of the guest's part in its single thread.",
	"inspect_vs_goplugin": inspectNote,
	"unary_*": "the same grpc-go on both sides: plugkit adds no code to the data path (its connection is a plain " +
		"*grpc.ClientConn; the broker and stdio streams are idle). A miss of a few percent is the noise of a 2-CPU machine " +
		"shared with other work (see the load averages and the spread), where host, plugin and the benchmark share two cores.",
	"stream_*":         "as unary_*: identical grpc-go transports; differences are scheduling noise on 2 shared CPUs.",
	"unary_64KiB_mtls": mtlsNote, "unary_1MiB_mtls": mtlsNote, "stream_1GiB_mtls": mtlsNote, "stream_256MiB_mtls": mtlsNote,
	"concurrent_16_mtls": mtlsNote, "concurrent_256_mtls": mtlsNote,
	"manager_discover_100_cold": "bounded by the launches, each now a describe-only run: the manager sets PLUGKIT_DESCRIBE=1 " +
		"(handshake.EnvDescribe), and the plugin (catalog.Main) checks its cookie and the offered versions, writes its description " +
		"as one line (plugkit-describe|1|base64 of the DescribeResponse) and exits 0: no key pair, socket, listener, TLS, HTTP/2, " +
		"health check, Describe RPC or Shutdown on either side. What is left beyond the floor is the host's part of the launch " +
		"(a P-256 key pair and certificate and a socket directory, kept so that a plugin that ignores the variable -- an older " +
		"plugkit plugin, a Python or Node SDK plugin, a go-plugin plugin -- is connected to on that same process, with no second " +
		"launch), reading and checking the line, and the reap. Hashing is no longer a part: the 100 paths reach one file, hashed " +
		"once (same device, inode, size and mtime), while others launch; two launches per CPU fill the time a launch waits on its " +
		"plugin. Measured in pairs of the same run (2 shared CPUs, interleaved, -count 4 -benchtime 2x): 5-10x the floor with every " +
		"path hashed, 2.6x with one hash per file, 2.0-2.1x with two launches per CPU and a whole host.Start, Describe and Close " +
		"per binary (~5 ms of CPU per launch beyond the process), 1.09-1.15x (median 1.10x) describing without serving. " +
		"Config.KeepDescribed (the process kept for its first use) still takes the whole start; a .wasm plugin is described the same way (0.7x of a whole start in pairs: the guest still pays its instantiation and package init).",
	"rss_plugin": "the difference is the plugin's linked code more than its heap: on this kernel (6.x, ext4, large folios) a Go " +
		"binary's text is resident whole once it runs (/proc/PID/smaps: 6.5 of 6.6 MB of the plugin's text, 5.5 of 5.6 MB of " +
		"grpc-go's), so every linked package costs its size in RSS whether it runs or not. Until the trace SDK and the span exporters " +
		"of the OTEL_* environment became opt-in (plugin/traceexport: otlptracegrpc, otlptracehttp, stdouttrace, the OTLP protos, " +
		"grpc-gateway and more of net/http, ~1.5 MB of a 3.6 MB larger binary) the plugin measured 1.16x grpc-go; without them " +
		"1.07x-1.10x in the same runs. What is left (~0.45 MB of text, 0.3 MB of rodata, 0.55 MB of anonymous memory): reflection and health, the broker (yamux) and stdio services, the handshake code, and " +
		"~0.6 MB more anonymous memory (more goroutines and init allocations; no GC has run when idle, in either). A forced GC and " +
		"scavenge after start-up made RSS larger, not smaller (the GC's own pages).",
	"scale_300_close_all":         scaleCloseNote,
	"scale_goroutines_per_plugin": scaleGoroutinesNote,
	"scale_fds_per_plugin": "a plugin costs its host its stdout and stderr pipes, the connection and the process's pidfd (as " +
		"go-plugin's host). The lock of its socket directory, which tells the next host whether this one still lives, is the " +
		"stdout pipe's read end: on Linux the pipe is a FIFO in the directory (.owner), flock()ed as the lock file was. One lock " +
		"for all of a host's directories, tried three ways before, measured slower to close many plugins at once: see " +
		"scale_300_close_all.",
	"scale_300_start": "each start is the one of start_to_first_call_automtls, 8 at a time on 2 CPUs: a start waits for CPU " +
		"behind the 7 others; go-plugin's host pays its P-521 key pairs the same way.",
	"scale_rss_per_plugin": "the host's heap and stacks for 8 goroutines, two pipes' buffers, one TLS connection and its " +
		"gRPC transport per plugin; go-plugin's host keeps the same per plugin.",
	"remote_*": "a round trip across the veth is mostly thread wake-ups in the host and the service; plugkit's service " +
		"spends about the CPU grpc-go's does per call and per MiB (the _service_cpu rows), its own code (the in-flight budget " +
		"and its stats handler, which bound a hostile host's memory) ~3.5% of the service's CPU profile, ~1-2 µs a call, and " +
		"~0.3 more futex wake-ups a call, likely from the GC of ~22 more heap objects a call (BENCHMARKS.md, \"Remote unary over a veth\"). The _service rows tell the service's " +
		"part from the host's.",
	"concurrent_*": "as unary_*: identical grpc-go transports; with 16-256 callers on 2 CPUs the figure is bound by CPU and scheduling, and varies by several percent between runs.",
}

// scaleCloseNote explains scale_300_close_all, from CPU accounting
// (getrusage of the host and of its reaped children around the close),
// perf of the host during the close, and per-close timestamps of an
// instrumented build, on the 2-CPU machine shared with other work.
const scaleCloseNote = "closing 300 plugins at once is bound by CPU: 300 processes wake, answer the Shutdown RPC, stop " +
	"and exit on 2 CPUs, and the host reaps them. Per close, a go-plugin plugin spends ~0.9 ms of CPU (its Shutdown handler " +
	"calls Stop and the process exits) and its host ~0.3 ms; a plugkit plugin ends its broker and stdio streams and stops " +
	"gracefully (GOAWAY and a ping the host must answer, so that the stdio stream's last output reaches the host), which " +
	"costs it more CPU and one more round trip with the host while 300 others wait for the same CPUs. Found and removed: " +
	"every idle plugin woke 10 times a second to poll for its host (~1.2 ms of CPU a second each: now once a second where " +
	"the kernel reports the host's death itself; 15-27% less CPU for the whole run). Measured and left: stopping without the graceful stop (Stop right " +
	"after the streams end) saved ~0.3 ms of plugin CPU a close and would lose the stdio stream's last output (round 4 does " +
	"it where there is no stdio stream and no call in flight); one " +
	"process-wide lock around the removal of the socket directories (the unlinks of 300 concurrent closes contend on the " +
	"parent directory's lock) changed nothing measurable; one lock file for all of a host's socket directories (hard links " +
	"to it, or a lock beside them that names them) saves the lock's descriptor a plugin and each Close's freeing of the " +
	"lock's inode (~2 ms of thread time in an ext4 journal transaction), yet closing all measured 15-30% slower in 10 of " +
	"10 interleaved pairs, for a cause not found: not kept (branch h-close-onelock); a third way, the directories inside one of " +
	"the host's that holds the lock, measured slower in 7 of 7 rounds too (branch h-close4, commit a6afe55). The reaping itself costs the host as much as go-plugin's: the " +
	"kernel drops each process's /proc entries (release_task, d_invalidate). The bound (round 4): a plugin that exits inside " +
	"its Shutdown handler, doing nothing else, took 0.98-1.02x go-plugin's time to close all 300; so 0.8x is out of the plugin's " +
	"reach, and what is left is the host's: removing each socket directory (~0.2 ms of host CPU a plugin, an inode or two " +
	"freed on ext4, under the lock of the temporary directory) and the reaping. A plugkit host with no call in flight now " +
	"tells its plugin so (plugkit-shutdown-idle), and the plugin stops at once: under Serve it returns without stopping " +
	"its server and leaves the connections to its exit (round 5: half the wake-ups of a plugin's close; most of the rest " +
	"is the Go runtime's sysmon, which ticks every 20 us while a process is busy)."

// scaleGoroutinesNote explains scale_goroutines_per_plugin.
const scaleGoroutinesNote = "each started plugin costs its host 8 goroutines (TestHostCostPerPlugin counts them): grpc-go's " +
	"connection 5 (the HTTP/2 reader, the writer, and the resolver's, balancer's and connectivity state's callback " +
	"serializers), the broker stream 2 (the broker reading it, and grpc-go's context watcher of the stream), and the " +
	"process's stderr pump 1. go-plugin's wire protocol keeps the broker stream open for the plugin's whole " +
	"life (a go-plugin plugin blocks on Accept until the host reads it), so grpc-go alone takes 7. Removed (15, then 12, " +
	"then 9, before): the stdout pump (one poller, an epoll instance read by one goroutine while any plugin's stdout is " +
	"watched, reads every plugin's stdout after the handshake; stderr keeps its pump, whose copy writer is the caller's and may block); " +
	"the stdio stream and its 2 goroutines for plugkit plugins, which keep their output on the pipes the host reads anyway " +
	"when the host has no Output writers (PLUGKIT_STDIO_PIPES; go-plugin plugins still get the stream); the goroutine " +
	"(and thread, in waitid) that waited for each plugin's exit (one reaper, the spawner thread, asks epoll which pidfds are ready on SIGCHLD); " +
	"the goroutine that waited to report an unexpected exit, the broker's sender of knock answers (started at the first " +
	"knock, which comes only with multiplexing), and the broker's own goroutine beside its reader."

// mtlsNote explains the -mtls data-path figures.
const mtlsNote = "plugkit's data path is grpc-go's, with the same TLS 1.3 (AES-GCM) as the baseline: plugkit's connection " +
	"is a plain *grpc.ClientConn and adds no code per call. On a quiet machine (load < 1.7, -count 4, 256 MiB streams) the " +
	"-mtls rows measured within the goals: 1 MiB unary 0.98x, stream 1.07x, 16 and 256 callers 0.99x and 0.98x of grpc-go " +
	"with mutual TLS. A miss here is the 2-CPU machine's noise, where host, plugin and benchmark share two cores."

// about describes every figure.
var about = []string{
	"**floor_plugin / floor_plugkit_cli**: what a user pays for a process that does nothing, timed by the report itself from " +
		"outside, as a shell would: fork/exec, the Go runtime's start, package init, exit and reaping, output to /dev/null; " +
		"interleaved with the inspect rows, median of the runs. The plugin floor is the bench echo plugin run without its cookie " +
		"(it says what it is and exits); the CLI floor is `plugkit` given an unknown command. The figure `go test` measured " +
		"inside the test process earlier (18.5 ms) did not hold: the same loop in a fresh test process, a small Go program and a " +
		"shell all measure 3.5-4 ms on this machine, and the old run's other start figures were 2-4x today's, so that run's machine " +
		"was loaded; a floor read inside a long-running test process also depends on what earlier benchmarks left (up to 1.3x " +
		"after the data-path benchmarks). Hence whole processes, timed outside any test process.",
	"**inspect_vs_floors / inspect_vs_goplugin**: the whole `plugkit inspect PLUGIN --cookie ...` (host process, plugin " +
		"process, AutoMTLS, one reflection ListServices, print, Close) of the bench echo plugin, as a whole process, against the " +
		"sum of the two floors and against `bench/testdata/gpinspect`: go-plugin v1.8.0 doing the same with its own echo plugin " +
		"(AutoMTLS, reflection ListServices, print, Kill).",
	"**start_to_first_call_automtls**: `host.Start` with AutoMTLS until the first echo call is answered, against the plugin's " +
		"floor + 2 ms, the floor (the same binary run without its cookie) measured in the same iterations of the same run " +
		"(BenchmarkStartClose: floor, start, close, in turn).",
	"**close_cooperative**: `Client.Close` of that plugin (the Shutdown RPC, its exit, reaped, connection and sockets released), " +
		"in the same iterations.",
	"**cold_start_automtls**: `host.Start` (AutoMTLS on) until the first echo call is answered, against go-plugin's " +
		"`NewClient`+`Client`+`Dispense` and the same call, both with their default AutoMTLS. Stopping the plugin is not timed.",
	"**cold_start_plain**: the same without TLS, against the floor measured inside the test process: running the same plugkit " +
		"plugin binary without its cookie, so that it starts, prints that it is a plugin and exits. The go-plugin column is " +
		"go-plugin without TLS.",
	"**unary_SIZE**: one echo round trip of SIZE bytes each way on a warm connection; `-mtls` with AutoMTLS against grpc-go with " +
		"the same mutual TLS. Bound by grpc-go's framing and copies, and by the unix socket.",
	"**stream_SIZE**: the plugin streams SIZE in 1 MiB messages to the host. Bound by protobuf and HTTP/2 copies and flow " +
		"control in grpc-go (and by AES-GCM in the `-mtls` rows).",
	"**concurrent_N**: 16-byte echo calls from N goroutines sharing one connection, calls per second.",
	"**remote_unary_16B_mtls / remote_stream_mtls** (BenchmarkRemote, needs root): host.Dial across a veth pair between two " +
		"network namespaces to plugin services (PLUGKIT_LISTEN) with mutual TLS, against plain grpc-go servers with the same TLS, " +
		"three service processes a contender; each round every connection in turn, in a rotating order, makes 5 unary calls or " +
		"streams 16 MiB. Ratio: the median over rounds of plugkit's median block divided by grpc-go's; spread: that ratio's " +
		"across runs. `_service`: grpc-go's client calling plugkit's service (the service's part without the host's); " +
		"`_service_cpu`: the service processes' CPU time per call or per MiB (schedstat of their threads).",
	"**manager_discover_100_cold**: `manager.Discover` over 100 symlinks of the example objectstore plugin with an empty cache: " +
		"the one file they reach is hashed once (SHA-256 of a 22 MB binary) and each path is launched for its description " +
		"(PLUGKIT_DESCRIBE=1: the plugin writes it and exits, without serving), two per CPU at a time. Baseline, its floor in the same run (`ManagerDiscover/floor`): hash each distinct file once and run the 100 " +
		"binaries without their cookie (each starts, says it is a plugin and exits), as jobs of one pool of NumCPU workers, " +
		"without the manager.",
	"**manager_discover_100_warm**: the same with the cache file of an earlier Discover: stat each binary, no hash, no launch.",
	"**scale_300_start / scale_300_close_all / scale_*_per_plugin**: `BenchmarkScale` runs two host programs, " +
		"`bench/testdata/pkscale` (host.Start with AutoMTLS, Close) and `bench/testdata/gpscale` (go-plugin v1.8.0's " +
		"NewClient, Client and Dispense with AutoMTLS, Kill), each on its own echo plugin (the bench plugins, whose service is " +
		"the same on both sides; the memory example has no go-plugin twin), in the order plugkit, go-plugin, go-plugin, " +
		"plugkit in each iteration: 300 plugins, 8 starts in flight, one echo call each, then all closed at once, each Close " +
		"in a goroutine of its own. start is the median of one plugin's start until its first call is answered; close_all " +
		"is until the last Close returns; per plugin is the host's goroutines, open file descriptors and VmRSS after the " +
		"calls and a 300 ms pause, less after the first start (made alone) and the same pause, divided by 299: what each " +
		"plugin adds, without what a host sets up once for all its plugins.",
	"**rss_total / rss_host / rss_plugin**: resident set of a small host program (`bench/testdata/pkhost`, `gphost`) and its " +
		"plugin after one call and 300 ms idle, both with AutoMTLS. rss_plugin's baseline is the same echo service on bare grpc-go " +
		"(`rawserver`, started and called by `rawhost` in the same way): one service, the same mutual TLS with a fresh P-256 key " +
		"pair on each side, a unix socket, the same grpc-go; the go-plugin column is go-plugin's plugin.",
}

// startNote explains start_to_first_call_automtls: where host.Start's time
// above the plugin's floor goes, from timestamps of an instrumented build
// (8 starts of the bench echo plugin on the 2-CPU benchmark machine).
const startNote = "host.Start's steps after the plugin's floor, in order, none waiting on a timer or a poll: the host's " +
	"P-256 key pair and certificate (~0.3 ms, before the launch: the certificate goes into the plugin's environment); in the " +
	"plugin, after its package init (~2 ms of its floor, GODEBUG=inittrace=1: protodesc 0.33 ms, protobuf's detrand 0.14 ms and json 0.10 ms, grpc 0.09 ms, descriptorpb 0.09 ms, x/net/trace 0.07 ms, the OTLP protos ~0.1 ms, ...: package-level set-up of the libraries every plugin links), its own " +
	"key pair (~0.35 ms) and its socket directory and listener (~0.5 ms: mkdir, socket, bind, chmod) before the handshake line; " +
	"then the dial, the mutual TLS 1.3 handshake (two ECDSA signatures and two certificate verifications on code run for the first " +
	"time in both processes: ~0.9 ms measured in one process), HTTP/2 preface and settings and the health check (together " +
	"1.6-2.6 ms); the broker and stdio streams open without waiting; the first call ~0.25 ms. Neither process runs a " +
	"garbage collection during start (GODEBUG=gctrace=1), so GC settings are no lever. " + startLevers

// startLevers is what was tried on the start path, each measured as the
// whole plugkit inspect in 3 x 100 interleaved pairs (old, new) at
// real-time priority, which stands in for a quiet machine on a shared one
// (two identical binaries measure 0.998-1.002x that way); medians of the
// pairs' ratios.
const startLevers = "Levers measured (whole `plugkit inspect`, 3 x 100 interleaved pairs, median ratio new/old). Kept: X25519 " +
	"(P-256 second, for the Python SDK's gRPC core) as AutoMTLS's key exchange instead of Go's default hybrid X25519MLKEM768 (package automtls says why that is " +
	"safe for a host and its own child): 0.971-0.979x, ~0.4 ms of the TLS handshake's key generation, encapsulation and " +
	"first-use self-tests in both processes. Tried: Ed25519 certificates instead of ECDSA P-256: 1.086x (slower). Waiting for " +
	"the connection to be READY instead of the health check's round trip: 0.973-0.982x (~0.4 ms), not kept: Start must fail " +
	"with ErrNotServing for a plugin whose health says NOT_SERVING (faults' and host's TestStartFailures), and only that " +
	"round trip can tell; go-plugin's host makes no health check at start, which is part of why its start is shorter by a " +
	"round trip. The host's key pair made in the background while the binary is checked and the socket directory made, with " +
	"the once-per-process sweep of dead hosts' directories in the background too: 1.01x (cpu 1.02x); the plugin's key pair " +
	"begun by a goroutine at package init when PLUGIN_CLIENT_CERT is set (it overlaps ~1.3 ms of the plugin's own init): " +
	"1.00x (cpu 1.02x): the extra OS threads Go starts to run the work in parallel cost what the overlap saves in " +
	"processes that live 15 ms on 2 CPUs, so neither was kept (round one's tries of the same kind measured likewise). " +
	"The sweep, mkdir and lock of the host's socket directory cost ~0.3 ms once per process (the sweep reads the whole " +
	"temporary directory); the plugin's own directory inside it ~0.05 ms of its ~0.3 ms listener (socket, bind, chmod). " +
	"One host identity per process would save a key pair per start after the first (~0.13 ms warm), nothing for a CLI that " +
	"starts one plugin; it is safe (the plugin only ever gets the certificate, each connection still pins its own plugin's " +
	"certificate, the key stays in the host) but the zero Security promises a fresh identity per Start " +
	"(TestStartUsesTheGivenIdentity); host.AutoMTLS(id) gives it to a host that wants it. Skipping the host's probe " +
	"connection (the unix socket's owner check before gRPC dials): 1.00x. The round trips left are physical: the " +
	"handshake line, the TLS 1.3 flights and HTTP/2 settings, the health check, the first call."

// inspectNote explains inspect_vs_goplugin: where plugkit inspect's time
// goes above go-plugin's 0.4x, and what the CLI's floor costs.
const inspectNote = "bound by the two floors (the plugkit CLI's and the plugin's) and the AutoMTLS start, which together " +
	"are already above 0.4x go-plugin's host. The CLI's floor (floor_plugkit_cli) is mostly package initialisation " +
	"(GODEBUG=inittrace=1: ~3.5 ms, almost all third-party: protocompile 0.32 ms, oras-go's registry 0.24 ms and oras-go " +
	"0.22 ms, protodesc's extra 0.25 ms, go-version 0.13 ms, genproto's annotations 0.11 ms, go-digest 0.10 ms, the OTLP " +
	"exporters' protos ~0.07 ms, yaml 0.03 ms, ...; plugkit's own packages under 0.1 ms together). Go runs every linked " +
	"package's init, and one binary links every subcommand's libraries (proto, release, install). The ceiling of that lever, " +
	"measured: a build with only inspect's imports (inspect, call, remote, reattach: ~1.7 ms of init) starts in 0.67x of " +
	"the full CLI's floor and runs the whole inspect in 0.87x (~2 ms less; 2 x 100 interleaved pairs each), which would " +
	"bring inspect from ~0.62x of go-plugin's host to ~0.54x, not to 0.4x. The cheap cuts are small and cost behaviour: go-version (0.13 ms) reads the Terraform-style " +
	"constraints of release and install (\"~> 2.0\", \">= 1.2, < 3\"), which golang.org/x/mod/semver has no parser for; " +
	"the OTLP exporters are linked for `plugkit demo`'s own spans (OTEL_TRACES_EXPORTER=otlp, docs/observability.md); " +
	"genproto's annotations come with sigstore's protobuf-specs, which release signing needs. Keeping them out of " +
	"inspect's process takes a second binary for proto, release and install (as cmd/plugkit-proto already is for proto), " +
	"which `go install .../cmd/plugkit@VERSION` alone would not install. Above the two floors inspect spends the AutoMTLS " +
	"start (start_to_first_call_automtls), one reflection call (~0.6 ms, the second call on a new connection) and Close " +
	"(close_cooperative), each after the other."

// closeNote explains close_cooperative.
const closeNote = "Close's steps: the Shutdown RPC (~0.15 ms); the plugin ends its broker and stdio streams and stops gracefully " +
	"(GOAWAY, ping, the host's transport closing: ~0.5 ms); its process exits and the kernel tears it down (~0.5 ms); the host " +
	"reaps it, closes its connection, drains the plugin's stderr and removes the socket directories (~0.3 ms). The host waits " +
	"on the exit itself, not on a grace timer; the graceful stop lets the plugin's last output reach the host through its " +
	"stdio stream. Closing the host's connection as soon as Shutdown is answered, so that the plugin's graceful stop " +
	"need not wait for the host to see its GOAWAY, measured 0.993-1.002x of the whole inspect (3 x 100 interleaved pairs), " +
	"under 0.1 ms, and would cut the stdio stream's last output; not kept. The rest is the plugin's exit (the kernel " +
	"tearing down a Go process, ~0.5 ms) and the host's reaping, which Close must wait for."
