//go:build linux

package bench

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/plugkit/plugkit/bench/internal/echo"
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

// BenchmarkRemote measures plugkit's plugin service (PLUGKIT_LISTEN,
// host.Dial) against a plain grpc-go server with the same mutual TLS,
// across the same veth pair between two network namespaces: a 16-byte
// unary round trip, and a server stream of streamMiB 1 MiB chunks.
func BenchmarkRemote(b *testing.B) {
	pair := netnstest.New(b, "pkb")
	pki, err := remotetest.NewPKI(testutil.TempDir(b), netnstest.PluginIP)
	if err != nil {
		b.Fatal(err)
	}
	pkAddr, rawAddr := netnstest.PluginIP+":7201", netnstest.PluginIP+":7202"

	pk := pair.Command(bin.pkplugin)
	pk.Env = append(os.Environ(), pki.Environ(pkAddr)...)
	startInNetns(b, pk, true)
	raw := pair.Command(bin.rawserver)
	raw.Env = append(os.Environ(), "BENCH_LISTEN="+rawAddr, "BENCH_TLS_CERT="+pki.ServerCert, "BENCH_TLS_KEY="+pki.ServerKey, "BENCH_TLS_CLIENT_CA="+pki.CAFile)
	startInNetns(b, raw, false)

	ctx := ctxFor(b, 30*time.Second)
	client, err := host.Dial(ctx, host.Remote{Endpoints: []string{pkAddr}},
		host.Options{Security: host.TLS(pki.HostTLS()), Versions: []int{1}, Logger: discard, DialOptions: []grpc.DialOption{pair.Dialer()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Close() })
	rawConn, err := grpc.NewClient("passthrough:///"+rawAddr, grpc.WithTransportCredentials(credentials.NewTLS(pki.HostTLS())), pair.Dialer(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(wire.DefaultMaxMessageSize), grpc.MaxCallSendMsgSize(wire.DefaultMaxMessageSize)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rawConn.Close() })
	conns := []struct {
		name string
		cc   grpc.ClientConnInterface
	}{{"plugkit", client.Conn()}, {"raw", rawConn}}
	// Warm both paths up (TLS sessions, flow-control windows, the veth's
	// queues): whichever ran first would otherwise pay for it.
	for _, c := range conns {
		if _, err := echo.Echo(ctx, c.cc, []byte("warm")); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		if _, err := echo.Download(ctx, c.cc, 64); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
	}
	payload := make([]byte, 16)
	for _, c := range conns {
		b.Run("unary_16B/"+c.name, func(b *testing.B) {
			ctx := ctxFor(b, 10*time.Minute)
			b.SetBytes(32)
			for b.Loop() {
				if _, err := echo.Echo(ctx, c.cc, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, c := range conns {
		b.Run("stream/"+c.name, func(b *testing.B) {
			ctx := ctxFor(b, 10*time.Minute)
			b.SetBytes(streamMiB << 20)
			for b.Loop() {
				n, err := echo.Download(ctx, c.cc, streamMiB)
				if err != nil || n != streamMiB<<20 {
					b.Fatalf("downloaded %d bytes: %v", n, err)
				}
			}
		})
	}
}
