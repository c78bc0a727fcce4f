package bench

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/plugkit/plugkit/automtls"
	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// bin holds the paths of the built contenders.
var bin struct {
	dir                                                            string
	pkplugin, gpplugin, rawserver, pkhost, gphost, rawhost, memory string
	pkscale, gpscale                                               string
}

// streamMiB is how much one streaming operation downloads, in MiB
// (BENCH_STREAM_MIB, default 1024).
var streamMiB = int64(1024)

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // no benchmarks asked for: build nothing
	}
	if v, err := strconv.ParseInt(os.Getenv("BENCH_STREAM_MIB"), 10, 64); err == nil && v > 0 {
		streamMiB = v
	}
	dir, err := os.MkdirTemp("", "plugkit-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles the contenders into dir, within a deadline.
func build(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/",
		"./testdata/pkplugin", "./testdata/gpplugin", "./testdata/rawserver", "./testdata/pkhost", "./testdata/gphost", "./testdata/rawhost",
		"./testdata/pkscale", "./testdata/gpscale",
		"../examples/objectstore/plugins/memory")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the benchmark binaries: %v\n%s", err, out)
	}
	bin.dir = dir
	for name, p := range map[string]*string{"pkplugin": &bin.pkplugin, "gpplugin": &bin.gpplugin, "rawserver": &bin.rawserver, "pkhost": &bin.pkhost, "gphost": &bin.gphost, "rawhost": &bin.rawhost, "memory": &bin.memory,
		"pkscale": &bin.pkscale, "gpscale": &bin.gpscale} {
		*p = filepath.Join(dir, name)
	}
	return nil
}

func ctxFor(b *testing.B, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	b.Cleanup(cancel)
	return ctx
}

var discard = slog.New(slog.DiscardHandler)

func pkConfig(tls bool) (host.Command, host.Options) {
	opts := host.Options{Versions: []int{1}, Logger: discard}
	if !tls {
		opts.Security = host.Plaintext()
	}
	return host.Command{Path: bin.pkplugin, Cookie: echo.Cookie}, opts
}

// startPlugkit starts the plugkit plugin through host.Start.
func startPlugkit(ctx context.Context, tls bool) (grpc.ClientConnInterface, func(), error) {
	cmd, opts := pkConfig(tls)
	c, err := host.Start(ctx, cmd, opts)
	if err != nil {
		return nil, nil, err
	}
	return c.Conn(), func() { c.Close() }, nil
}

type gpEcho struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (gpEcho) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return nil }

func (gpEcho) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

// startGoPlugin starts the go-plugin plugin through go-plugin's client.
func startGoPlugin(tls bool) (grpc.ClientConnInterface, func(), error) {
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: echo.Cookie.Key, MagicCookieValue: echo.Cookie.Value},
		Plugins:          goplugin.PluginSet{echo.PluginName: gpEcho{}},
		Cmd:              exec.Command(bin.gpplugin),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         tls,
		Logger:           hclog.NewNullLogger(),
		StartTimeout:     30 * time.Second,
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, nil, err
	}
	raw, err := rpc.Dispense(echo.PluginName)
	if err != nil {
		client.Kill()
		return nil, nil, err
	}
	return raw.(*grpc.ClientConn), client.Kill, nil
}

// startRaw starts the plain grpc-go server and dials it, with mutual TLS
// when tls is set.
func startRaw(ctx context.Context, tlsOn bool) (grpc.ClientConnInterface, func(), error) {
	return startRawWith(ctx, tlsOn, nil)
}

// startRawWith is startRaw with env added to the server's environment
// and dial added to the connection's options.
func startRawWith(ctx context.Context, tlsOn bool, env []string, dial ...grpc.DialOption) (grpc.ClientConnInterface, func(), error) {
	cmd := exec.Command(bin.rawserver)
	killWithParent(cmd)
	cmd.Env = append(os.Environ(), env...)
	var id *automtls.Identity
	if tlsOn {
		var err error
		if id, err = automtls.New(); err != nil {
			return nil, nil, err
		}
		cmd.Env = append(cmd.Env, "BENCH_CLIENT_CERT="+string(id.PEM()))
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	stop := func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	lineCh := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		lineCh <- l
	}()
	var line string
	select {
	case line = <-lineCh:
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	}
	addr, certB64, ok := strings.Cut(strings.TrimSpace(line), "|")
	if !ok {
		stop()
		return nil, nil, fmt.Errorf("rawserver said %q", line)
	}
	creds := insecure.NewCredentials()
	if tlsOn {
		der, err := base64.RawStdEncoding.DecodeString(certB64)
		if err != nil {
			stop()
			return nil, nil, err
		}
		cert, err := automtls.ParseDER(der)
		if err != nil {
			stop()
			return nil, nil, err
		}
		creds = credentials.NewTLS(id.Config(cert))
	}
	conn, err := grpc.NewClient("passthrough:///"+addr, append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		})}, dial...)...)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return conn, func() { conn.Close(); stop() }, nil
}

// contender is one side of a data-path comparison.
type contender struct {
	name  string
	start func(ctx context.Context) (grpc.ClientConnInterface, func(), error)
}

var contenders = []contender{
	{"plugkit", func(ctx context.Context) (grpc.ClientConnInterface, func(), error) { return startPlugkit(ctx, false) }},
	{"raw", func(ctx context.Context) (grpc.ClientConnInterface, func(), error) { return startRaw(ctx, false) }},
	{"plugkit-mtls", func(ctx context.Context) (grpc.ClientConnInterface, func(), error) { return startPlugkit(ctx, true) }},
	{"raw-mtls", func(ctx context.Context) (grpc.ClientConnInterface, func(), error) { return startRaw(ctx, true) }},
	{"goplugin-mtls", func(context.Context) (grpc.ClientConnInterface, func(), error) { return startGoPlugin(true) }},
}

// withContenders starts every contender, warms each connection up with a
// call, runs f for each and stops them all.
func withContenders(b *testing.B, f func(b *testing.B, c contender, cc grpc.ClientConnInterface)) {
	ctx := ctxFor(b, 30*time.Second)
	conns := make([]grpc.ClientConnInterface, len(contenders))
	for i, c := range contenders {
		cc, stop, err := c.start(ctx)
		if err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		b.Cleanup(stop)
		if _, err := echo.Echo(ctx, cc, []byte("warm")); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		conns[i] = cc
	}
	for i, c := range contenders {
		f(b, c, conns[i])
	}
}

// BenchmarkUnary measures one unary round trip of 16 B, 64 KiB and 1 MiB
// payloads (sent and echoed back).
func BenchmarkUnary(b *testing.B) {
	withContenders(b, func(b *testing.B, c contender, cc grpc.ClientConnInterface) {
		for _, size := range []struct {
			name string
			n    int
		}{{"16B", 16}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}} {
			payload := make([]byte, size.n)
			b.Run(size.name+"/"+c.name, func(b *testing.B) {
				ctx := ctxFor(b, 10*time.Minute)
				b.SetBytes(int64(2 * size.n))
				for b.Loop() {
					if _, err := echo.Echo(ctx, cc, payload); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

// BenchmarkStream measures a server stream of streamMiB chunks of 1 MiB.
func BenchmarkStream(b *testing.B) {
	withContenders(b, func(b *testing.B, c contender, cc grpc.ClientConnInterface) {
		b.Run(c.name, func(b *testing.B) {
			ctx := ctxFor(b, 10*time.Minute)
			b.SetBytes(streamMiB << 20)
			for b.Loop() {
				n, err := echo.Download(ctx, cc, streamMiB)
				if err != nil || n != streamMiB<<20 {
					b.Fatalf("downloaded %d bytes: %v", n, err)
				}
			}
		})
	})
}

// BenchmarkConcurrent measures calls per second of 16-byte unary calls
// from 16 and 256 goroutines sharing one connection.
func BenchmarkConcurrent(b *testing.B) {
	withContenders(b, func(b *testing.B, c contender, cc grpc.ClientConnInterface) {
		for _, callers := range []int{16, 256} {
			b.Run(fmt.Sprintf("%d/%s", callers, c.name), func(b *testing.B) {
				ctx := ctxFor(b, 10*time.Minute)
				payload := make([]byte, 16)
				var next atomic.Int64
				var failed atomic.Value
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							if _, err := echo.Echo(ctx, cc, payload); err != nil {
								failed.Store(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				if err := failed.Load(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
			})
		}
	})
}

// BenchmarkColdStartTLS measures launch, handshake and the first answered
// call with AutoMTLS on; stopping the plugin is not timed.
func BenchmarkColdStartTLS(b *testing.B) {
	b.Run("plugkit", func(b *testing.B) { coldPlugkit(b, true) })
	b.Run("goplugin", func(b *testing.B) { coldGoPlugin(b, true) })
}

// BenchmarkColdStartPlain is BenchmarkColdStartTLS without TLS, beside the
// floor: running the same plugkit binary (without the cookie, so it says
// what it is and exits) until it exits.
func BenchmarkColdStartPlain(b *testing.B) {
	b.Run("plugkit", func(b *testing.B) { coldPlugkit(b, false) })
	b.Run("goplugin", func(b *testing.B) { coldGoPlugin(b, false) })
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			runFloor(b)
		}
	})
}

// BenchmarkStartClose measures, interleaved in each iteration so that
// they share the machine's and this process's state: the floor (the
// plugkit plugin binary run without its cookie until it exits), host.Start
// with AutoMTLS until the first echo call is answered, and Close of that
// cooperative plugin (its Shutdown RPC, its exit, reaped). It reports the
// median of each in ms: floor-ms, start-ms, close-ms.
func BenchmarkStartClose(b *testing.B) {
	debug.FreeOSMemory() // not the heap earlier benchmarks left behind
	var floor, start, closing []time.Duration
	for b.Loop() {
		t := time.Now()
		runFloor(b)
		floor = append(floor, time.Since(t))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd, opts := pkConfig(true)
		t = time.Now()
		c, err := host.Start(ctx, cmd, opts)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := echo.Echo(ctx, c.Conn(), []byte("first")); err != nil {
			b.Fatal(err)
		}
		start = append(start, time.Since(t))
		t = time.Now()
		if err := c.Close(); err != nil {
			b.Fatalf("Close: %v", err)
		}
		closing = append(closing, time.Since(t))
		cancel()
	}
	b.ReportMetric(medianMS(floor), "floor-ms")
	b.ReportMetric(medianMS(start), "start-ms")
	b.ReportMetric(medianMS(closing), "close-ms")
}

// runFloor runs the plugkit plugin binary without its cookie: it starts,
// prints that it is a plugin and exits with status 1.
func runFloor(b *testing.B) {
	if err := runWithoutCookie(bin.pkplugin); err != nil {
		b.Fatal(err)
	}
}

// runWithoutCookie runs the plugin binary at path without its cookie,
// until it exits; it is an error that the plugin ran or could not start.
func runWithoutCookie(path string) error {
	if err := exec.Command(path).Run(); err == nil {
		return fmt.Errorf("%s ran without its cookie", path)
	} else if _, ok := err.(*exec.ExitError); !ok {
		return err
	}
	return nil
}

// median is the median of v, which it sorts.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// medianMS is the median of d, in milliseconds.
func medianMS(d []time.Duration) float64 {
	ms := make([]float64, len(d))
	for i, v := range d {
		ms[i] = float64(v) / 1e6
	}
	return median(ms)
}

func coldPlugkit(b *testing.B, tls bool) {
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cc, stop, err := startPlugkit(ctx, tls)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := echo.Echo(ctx, cc, []byte("first")); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		stop()
		cancel()
		b.StartTimer()
	}
}

func coldGoPlugin(b *testing.B, tls bool) {
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cc, stop, err := startGoPlugin(tls)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := echo.Echo(ctx, cc, []byte("first")); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		stop()
		cancel()
		b.StartTimer()
	}
}

// managerBinaries is how many plugin binaries the manager benchmark
// discovers: symlinks to one built objectstore plugin.
const managerBinaries = 100

func pluginDir(b *testing.B) string {
	dir := testutil.TempDir(b)
	for i := range managerBinaries {
		if err := os.Symlink(bin.memory, filepath.Join(dir, fmt.Sprintf("memory-%03d", i))); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

func discover(b *testing.B, dir, cache string) int64 {
	f := &manager.Finder{CacheFile: cache, Launch: host.Command{Cookie: objectstore.Cookie}, Host: host.Options{Logger: discard}}
	m := manager.New(manager.Config{Sources: []manager.Source{f.Dirs(dir)}, Logger: discard})
	defer m.Close()
	if err := m.Discover(ctxFor(b, 5*time.Minute)); err != nil {
		b.Fatal(err)
	}
	for _, bin := range m.Entries() {
		if bin.Err != nil {
			b.Fatalf("%s: %v", bin.Path, bin.Err)
		}
	}
	return f.Launches()
}

// BenchmarkManagerDiscover measures Discover over 100 plugin binaries:
// cold (empty cache: every binary launched and described) and warm (the
// cache file of an earlier run: no launch), beside cold's floor.
func BenchmarkManagerDiscover(b *testing.B) {
	dir := pluginDir(b)
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			discoverFloor(b, dir)
		}
	})
	b.Run("cold", func(b *testing.B) {
		var launches int64
		for b.Loop() {
			launches = discover(b, dir, "")
		}
		b.ReportMetric(float64(launches), "launches")
	})
	b.Run("warm", func(b *testing.B) {
		cache := filepath.Join(testutil.TempDir(b), "cache.json")
		discover(b, dir, cache)
		var launches int64
		for b.Loop() {
			launches = discover(b, dir, cache)
		}
		b.ReportMetric(float64(launches), "launches")
	})
}

// discoverFloor is what a cold Discover of dir cannot do without, with no
// manager: hash each distinct file once and run every binary (without its
// cookie: the process starts, runs the Go runtime's start-up and package
// init, says it is a plugin and exits), as jobs of one pool of NumCPU
// workers.
func discoverFloor(b *testing.B, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var jobs []func() error
	distinct := map[string]bool{}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			b.Fatal(err)
		}
		if !distinct[real] {
			distinct[real] = true
			jobs = append(jobs, func() error { return hashFile(real) })
		}
		jobs = append(jobs, func() error { return runWithoutCookie(p) })
	}
	ch := make(chan func() error)
	errs := make(chan error, len(jobs))
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Go(func() {
			for job := range ch {
				errs <- job()
			}
		})
	}
	for _, job := range jobs {
		ch <- job
	}
	close(ch)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// hashFile computes the SHA-256 of the file at path.
func hashFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(sha256.New(), f)
	return err
}

// BenchmarkRSS runs the memory hosts: each starts its plugin (AutoMTLS),
// makes a call, idles and reports both resident set sizes. raw is the
// plugin's baseline: the same echo service on bare grpc-go with the same
// mutual TLS (rawserver), started and called by rawhost.
func BenchmarkRSS(b *testing.B) {
	for _, side := range []struct{ name, host, plugin string }{
		{"plugkit", bin.pkhost, bin.pkplugin},
		{"raw", bin.rawhost, bin.rawserver},
		{"goplugin", bin.gphost, bin.gpplugin},
	} {
		b.Run(side.name, func(b *testing.B) {
			var hostKiB, pluginKiB int64
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				out, err := exec.CommandContext(ctx, side.host, side.plugin).Output()
				cancel()
				if err != nil {
					b.Fatalf("%s: %v", side.host, err)
				}
				var h, p int64
				if _, err := fmt.Sscan(string(out), &h, &p); err != nil || h <= 0 || p <= 0 {
					b.Fatalf("%s printed %q", side.host, out)
				}
				hostKiB += h
				pluginKiB += p
			}
			b.ReportMetric(float64(hostKiB)/float64(b.N), "host-KiB")
			b.ReportMetric(float64(pluginKiB)/float64(b.N), "plugin-KiB")
			b.ReportMetric(float64(hostKiB+pluginKiB)/float64(b.N), "total-KiB")
		})
	}
}
