//go:build linux

package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/bench/internal/scale"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/netnstest"
	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/wire"
)

// startInNetns runs cmd (in the plugins' namespace) and waits until it
// prints a line on stdout (rawserver) or a "listening" record on stderr
// (a plugin service).
func startInNetns(b *testing.B, cmd *exec.Cmd, stderrSignal bool) {
	b.Helper()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.Cleanup(func() {
		stdin.Close()
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	ready := make(chan string, 2)
	watch := func(r io.Reader, want string) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if strings.Contains(sc.Text(), want) {
				ready <- sc.Text()
				break
			}
		}
		io.Copy(io.Discard, r)
	}
	if stderrSignal {
		go watch(stderr, "plugin service listening")
		go io.Copy(io.Discard, stdout)
	} else {
		go watch(stdout, "|")
		go io.Copy(io.Discard, stderr)
	}
	select {
	case <-ready:
	case <-exited:
		b.Fatalf("%s exited at start", cmd.Path)
	case <-time.After(30 * time.Second):
		b.Fatalf("%s did not start within 30 s", cmd.Path)
	}
}

// remoteReplicas is how many service processes each contender runs in
// BenchmarkRemote: two identical processes differ by up to 10% in one run
// on this machine (their threads' placement), more than the 5% measured.
const remoteReplicas = 3

// remoteBlock is how many unary calls one connection makes in a row
// before the next connection's turn, and remoteStreamBlockMiB how many
// MiB one connection streams in its turn.
const (
	remoteBlock          = 5
	remoteStreamBlockMiB = 16
)

// remoteConn is one connection of BenchmarkRemote, to one process of one
// contender.
type remoteConn struct {
	side int // index in remoteSides
	cc   grpc.ClientConnInterface
	pid  int // the service process's
}

// The contenders of BenchmarkRemote: plugkit's host (host.Dial) to
// plugkit's service, plain grpc-go on both sides, and, to tell the
// host's part from the service's, a plain grpc-go client to plugkit's
// service.
var remoteSides = [...]string{"plugkit", "grpc-go", "grpc-go-to-service"}

// BenchmarkRemote measures plugkit's plugin service (PLUGKIT_LISTEN,
// host.Dial) against a plain grpc-go server with the same mutual TLS,
// across the same veth pair between two network namespaces: a 16-byte
// unary round trip, and a server stream in 1 MiB chunks.
//
// Each contender runs remoteReplicas service processes. One iteration is
// a round: every connection (each to a service process of its own) in turn, in an order that rotates from round
// to round, makes remoteBlock unary calls (or streams
// remoteStreamBlockMiB), so that drift in the machine's load falls on
// every contender alike. Each side reports the median of its blocks
// (µs per call, MB/s), the CPU time its service processes spent per call
// or per MiB (µs; less distorted by the machine's load than the time),
// and ratio, the median over rounds of plugkit's median block in the
// round divided by grpc-go's.
func BenchmarkRemote(b *testing.B) {
	pair := netnstest.New(b, "pkb")
	pki, err := remotetest.NewPKI(testutil.TempDir(b), netnstest.PluginIP)
	if err != nil {
		b.Fatal(err)
	}
	ctx := ctxFor(b, 60*time.Second)
	rawDial := func(addr string) grpc.ClientConnInterface {
		cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(credentials.NewTLS(pki.HostTLS())), pair.Dialer(),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(wire.DefaultMaxMessageSize), grpc.MaxCallSendMsgSize(wire.DefaultMaxMessageSize)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cc.Close() })
		return cc
	}
	var conns []remoteConn
	start := func(side int, addr string) int {
		cmd := pair.Command(bin.pkplugin)
		cmd.Env = append(os.Environ(), pki.Environ(addr)...)
		if side == 1 {
			cmd = pair.Command(bin.rawserver)
			cmd.Env = append(os.Environ(), "BENCH_LISTEN="+addr, "BENCH_TLS_CERT="+pki.ServerCert, "BENCH_TLS_KEY="+pki.ServerKey, "BENCH_TLS_CLIENT_CA="+pki.CAFile)
		}
		startInNetns(b, cmd, side != 1)
		return cmd.Process.Pid
	}
	for i := range remoteReplicas {
		for side := range remoteSides {
			addr := fmt.Sprintf("%s:%d", netnstest.PluginIP, 7201+len(remoteSides)*i+side)
			c := remoteConn{side: side, pid: start(side, addr)}
			if side == 0 {
				client, err := host.Dial(ctx, host.Remote{Endpoints: []string{addr}},
					host.Options{Security: host.TLS(pki.HostTLS()), Versions: []int{1}, Logger: discard, DialOptions: []grpc.DialOption{pair.Dialer()}})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { client.Close() })
				c.cc = client.Conn()
			} else {
				c.cc = rawDial(addr)
			}
			conns = append(conns, c)
		}
	}
	// Warm every connection up (TLS sessions, flow-control windows, the
	// veth's queues): whichever ran first would otherwise pay for it.
	payload := make([]byte, 16)
	for _, c := range conns {
		for range 200 {
			if _, err := echo.Echo(ctx, c.cc, payload); err != nil {
				b.Fatalf("%s: %v", remoteSides[c.side], err)
			}
		}
		if _, err := echo.Download(ctx, c.cc, 64); err != nil {
			b.Fatalf("%s: %v", remoteSides[c.side], err)
		}
	}
	b.Run("unary_16B", func(b *testing.B) {
		ctx := ctxFor(b, 10*time.Minute)
		remoteRounds(b, conns, "us", remoteBlock, "us/call", func(cc grpc.ClientConnInterface) float64 {
			t0 := time.Now()
			for range remoteBlock {
				if _, err := echo.Echo(ctx, cc, payload); err != nil {
					b.Fatal(err)
				}
			}
			return float64(time.Since(t0).Nanoseconds()) / 1e3 / remoteBlock
		})
	})
	b.Run("stream", func(b *testing.B) {
		ctx := ctxFor(b, 10*time.Minute)
		mib := min(streamMiB, remoteStreamBlockMiB)
		remoteRounds(b, conns, "MB/s", float64(mib), "us/MiB", func(cc grpc.ClientConnInterface) float64 {
			t0 := time.Now()
			n, err := echo.Download(ctx, cc, mib)
			if err != nil || n != mib<<20 {
				b.Fatalf("downloaded %d bytes: %v", n, err)
			}
			return float64(n) / 1e6 / time.Since(t0).Seconds()
		})
	})
}

// remoteRounds runs rounds of block on every connection in turn, and
// reports each side's median block in unit, its service processes' CPU
// time per op (a unary call, or a MiB streamed), and the median of the
// rounds' ratios of plugkit to grpc-go.
func remoteRounds(b *testing.B, conns []remoteConn, unit string, opsPerBlock float64, cpuUnit string, block func(grpc.ClientConnInterface) float64) {
	all := make([][]float64, len(remoteSides))
	var ratios []float64
	inRound := make([][]float64, len(remoteSides))
	perConn := make([][]float64, len(conns))
	cpu0 := make([]time.Duration, len(conns))
	for i, c := range conns {
		cpu0[i] = scale.RunTime(c.pid)
	}
	for round := 0; b.Loop(); round++ {
		for i := range inRound {
			inRound[i] = inRound[i][:0]
		}
		for j := range conns {
			k := (round + j) % len(conns)
			c := conns[k]
			v := block(c.cc)
			perConn[k] = append(perConn[k], v)
			inRound[c.side] = append(inRound[c.side], v)
			all[c.side] = append(all[c.side], v)
		}
		ratios = append(ratios, median(inRound[0])/median(inRound[1]))
	}
	cpu := make([]time.Duration, len(remoteSides))
	for i, c := range conns {
		cpu[c.side] += scale.RunTime(c.pid) - cpu0[i]
		b.Logf("%s, process %d: median %.1f %s", remoteSides[c.side], c.pid, median(perConn[i]), unit)
	}
	for i, side := range remoteSides {
		ops := float64(len(all[i])) * opsPerBlock
		b.ReportMetric(float64(cpu[i].Nanoseconds())/1e3/ops, side+"-service-cpu-"+cpuUnit)
		b.ReportMetric(median(all[i]), side+"-"+unit)
	}
	b.ReportMetric(median(ratios), "ratio")
}
