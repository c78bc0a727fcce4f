package host_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	grpcgzip "google.golang.org/grpc/encoding/gzip" // the bomb plugin's compressor, and the host's
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// stdioBombSize is the size of the one stdio message the "stdiobomb"
// plugin sends: newlines only (60 KB with gzip).
const stdioBombSize = 60 << 20

// stdioBombPlugin is a hand-made plugin whose GRPCStdio stream sends one
// message of stdioBombSize newlines (gzip-compressed when
// PLUGKIT_TEST_GZIP is 1) once the file PLUGKIT_TEST_GO exists, then a
// line "bomb done".
func stdioBombPlugin() {
	// The fastest level: the plugin's time to compress is not what is
	// measured (the message is the same 60 KB or so).
	if err := grpcgzip.SetLevel(gzip.BestSpeed); err != nil {
		os.Exit(4)
	}
	srv, ln := rawServer(healthpb.HealthCheckResponse_SERVING)
	pluginpb.RegisterGRPCStdioServer(srv, stdioBomb{})
	fmt.Printf("1|1|%s|%s|grpc|\n", ln.Addr().Network(), ln.Addr())
	srv.Serve(ln)
}

type stdioBomb struct {
	pluginpb.UnimplementedGRPCStdioServer
}

func (stdioBomb) StreamStdio(_ *emptypb.Empty, s grpc.ServerStreamingServer[pluginpb.StdioData]) error {
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(os.Getenv("PLUGKIT_TEST_GO")); err == nil {
			break
		} else if time.Now().After(deadline) {
			return err
		}
	}
	if os.Getenv("PLUGKIT_TEST_GZIP") == "1" {
		if err := grpc.SetSendCompressor(s.Context(), "gzip"); err != nil {
			return err
		}
	}
	err := s.Send(&pluginpb.StdioData{Channel: pluginpb.StdioData_STDERR, Data: bytes.Repeat([]byte("\n"), stdioBombSize)})
	if err == nil {
		err = s.Send(&pluginpb.StdioData{Channel: pluginpb.StdioData_STDERR, Data: []byte("bomb done\n")})
	}
	<-s.Context().Done()
	return err
}

// stdioBombHost is a host, run as a process of its own so that its peak
// memory is its own: it starts the "stdiobomb" plugin, reads its VmHWM,
// lets the plugin send its message, waits (up to 10 minutes) for the
// host to be done with it, and prints "<VmHWM before> <VmHWM after>
// <outcome>" in kB, the outcome being "refused" (the stream was ended
// at the message limit) or "logged" (all of it went through the sink).
func stdioBombHost() {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "stdio bomb host:", err)
		os.Exit(7)
	}
	exe, err := os.Executable()
	if err != nil {
		fail(err)
	}
	dir, err := os.MkdirTemp("", "pkbomb") // short: unix socket paths are limited
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	goFile := filepath.Join(dir, "go")
	var logs syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := host.Start(ctx, host.Command{
		Path: exe,
		Env: []string{modeEnv + "=stdiobomb", "GORACE=atexit_sleep_ms=0",
			"PLUGKIT_TEST_GO=" + goFile, "PLUGKIT_TEST_GZIP=" + os.Getenv("PLUGKIT_TEST_GZIP")},
		Cookie:   testCookie,
		Timeouts: host.Timeouts{Start: 20 * time.Second},
		Listen:   host.Listen{UnixSocketDir: dir},
	}, host.Options{Versions: []int{1}, Name: "bomb", Security: host.Plaintext(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		fail(err)
	}
	defer c.Close()
	runtime.GC()
	before := vmHWM(fail)
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		fail(err)
	}
	outcome := ""
	for deadline := time.Now().Add(10 * time.Minute); outcome == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		switch out := logs.String(); {
		case strings.Contains(out, "over the host's limit"):
			outcome = "refused"
		case strings.Contains(out, "bomb done"):
			outcome = "logged"
		}
	}
	if outcome == "" {
		fail(fmt.Errorf("the host neither refused nor logged the bomb in 10 minutes; its log:\n%.2000s", logs.String()))
	}
	fmt.Printf("%d %d %s\n", before, vmHWM(fail), outcome)
}

// vmHWM is this process's peak resident memory in kB (Linux).
func vmHWM(fail func(error)) int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fail(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				fail(err)
			}
			return kb
		}
	}
	fail(fmt.Errorf("no VmHWM in /proc/self/status"))
	return 0
}
