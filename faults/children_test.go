package faults_test

// The test binary doubles as every program the fault cases need: started
// with PLUGKIT_FAULTS_MODE=MODE it becomes that program (see TestMain).

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/plugin"
)

var cookie = handshake.Cookie{Key: "PLUGKIT_FAULTS_COOKIE", Value: "f"}

// faultyStore misbehaves on request. Exists: key "crash" panics, key
// "hang" never returns, keys starting with "yes" exist. Get: key "crash"
// sends two chunks and panics. Init: config "flood" = MiB writes that much
// to the process's stderr in the background, then "flood done"; config
// "hostile" writes hostile lines to stderr (fd 2) and through os.Stdout
// and os.Stderr (the stdio stream), then "hostile done".
type faultyStore struct {
	objectstorev1.UnimplementedObjectStoreServer
}

func (faultyStore) Exists(_ context.Context, req *objectstorev1.ExistsRequest) (*objectstorev1.ExistsResponse, error) {
	switch req.GetKey() {
	case "crash":
		panic("deliberate crash mid-call")
	case "hang":
		time.Sleep(time.Hour) // ignores its context, as a stuck plugin does
	}
	return &objectstorev1.ExistsResponse{Exists: strings.HasPrefix(req.GetKey(), "yes")}, nil
}

func (faultyStore) Get(req *objectstorev1.GetRequest, stream grpc.ServerStreamingServer[objectstorev1.GetResponse]) error {
	for i := range 2 {
		if err := stream.Send(&objectstorev1.GetResponse{Chunk: []byte(fmt.Sprintf("chunk %d", i))}); err != nil {
			return err
		}
	}
	if req.GetKey() == "crash" {
		time.Sleep(50 * time.Millisecond) // let the chunks reach the host
		panic("deliberate crash mid-stream")
	}
	return nil
}

func (faultyStore) Init(_ context.Context, req *objectstorev1.InitRequest) (*objectstorev1.InitResponse, error) {
	fd2 := os.NewFile(uintptr(syscall.Stderr), "stderr")
	if v := req.GetConfig()["flood"]; v != "" {
		mib, _ := strconv.Atoi(v)
		go flood(fd2, mib)
	}
	if req.GetConfig()["hostile"] != "" {
		for i, w := range []*os.File{fd2, os.Stdout, os.Stderr} {
			fmt.Fprintln(w, `{"@level":"error","@message":{"an":"object"},"@module":"x"}`)
			fmt.Fprintln(w, `{"@level":7,"@message":["list"],"@timestamp":"never"}`)
			fmt.Fprintln(w, `{"@message":null,"@level":null,"@caller":{"deep":[1,2,{"x":null}]}}`)
			fmt.Fprintln(w, `{"@message": "unterminated`)
			w.Write([]byte("\x00\xff\xfe binary \x1b[31m\x1b]0;title\x07 junk \xc3\x28\r\n"))
			w.Write([]byte("panic: not really\n"))
			w.Write([]byte(strings.Repeat("\u202e", 1000) + "\n"))
			w.Write(append([]byte(strings.Repeat("N", 3<<20)), '\n')) // one 3 MiB line
			w.Write([]byte("no newline at all, then a lone CR\r"))
			fmt.Fprintf(w, "\nhostile done on %s\n", []string{"fd2", "stdout", "stderr"}[i])
		}
	}
	return &objectstorev1.InitResponse{}, nil
}

// floodLine is one line of the flood: 1 KiB with its newline.
var floodLine = "[INFO] flood " + strings.Repeat("x", 1024-len("[INFO] flood ")-1) + "\n"

func flood(w *os.File, mib int) {
	line := []byte(floodLine)
	buf := make([]byte, 0, 64<<10)
	for len(buf)+len(line) <= cap(buf) {
		buf = append(buf, line...)
	}
	lines := len(buf) / len(line)
	n := 0
	for written := 0; written < mib<<20; written += len(buf) {
		w.Write(buf)
		n += lines
	}
	fmt.Fprintf(w, "flood done %d lines\n", n)
}

func serveConfig() plugin.Config {
	return plugin.Config{Cookie: cookie, Versions: map[int]plugin.Register{1: func(s *grpc.Server, _ *broker.Broker) error {
		objectstorev1.RegisterObjectStoreServer(s, faultyStore{})
		return nil
	}}}
}

func runChild(mode string) {
	switch mode {
	case "serve":
		plugin.Serve(serveConfig())
	case "serve-nowatch":
		// plugin.Serve, minus the parent watch.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		err := plugin.RunIn(ctx, serveConfig(), plugin.Harness{NoParentWatch: true})
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "garbage":
		fmt.Println("Welcome to my plugin! Loading...")
		plugin.Serve(serveConfig())
	case "silent":
		time.Sleep(time.Minute)
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: cannot open /etc/faulty.conf: permission denied")
		os.Exit(3)
	case "notserving":
		// A real plugkit plugin (AutoMTLS and all) whose health check
		// says NOT_SERVING.
		cfg := serveConfig()
		cfg.ServerOptions = []grpc.ServerOption{grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if info.FullMethod == healthpb.Health_Check_FullMethodName {
				return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}, nil
			}
			return h(ctx, req)
		})}
		plugin.Serve(cfg)
	case "catalog":
		cat, err := catalog.New("1.0.0", catalog.Implement[objectstorev1.ObjectStoreServer]("objectstore", 1, 0, "faults",
			&objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: backend.NewMemory()}))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		catalog.Serve(cookie, cat)
	case "host", "host-nowatch":
		// A host process: it starts a plugin with host.Start, prints the
		// plugin's pid and address, and waits to be killed.
		pluginMode := "serve"
		if mode == "host-nowatch" {
			pluginMode = "serve-nowatch"
		}
		exe, _ := os.Executable()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := host.Start(ctx, host.Command{Path: exe, Cookie: cookie,
			Env: []string{modeEnv + "=" + pluginMode, "GORACE=atexit_sleep_ms=0"}}, host.Options{Versions: []int{1}})
		cancel()
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("%d %s\n", c.Pid(), c.ReattachConfig().Addr.String)
		time.Sleep(time.Minute)
		c.Close()
	default:
		fmt.Fprintln(os.Stderr, "unknown fault mode", mode)
		os.Exit(2)
	}
}
