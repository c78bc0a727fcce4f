// Command guest is the WebAssembly test plugin of package wasmhost's
// tests, built with GOOS=wasip1 GOARCH=wasm. It serves objectstore.v1 with
// the cookie PLUGKIT_TEST_COOKIE=c00kie, versions 1 and 2 (PLUGKIT_GUEST_VERSIONS=3 makes it
// speak only 3). Exists runs the probe its key names and answers true
// when it succeeded; a failure is the call's error:
//
//	yes...         true, nothing else
//	read:PATH      os.ReadFile(PATH)
//	write:PATH     os.WriteFile(PATH)
//	dial:ADDR      net.Dial("tcp", ADDR)
//	alloc          allocate until memory runs out
//	spin           for {}
//	env:NAME       the variable is set
//	initfile       stats the file its init opened (PLUGKIT_GUEST_INIT_OPEN)
//	initstat       its init found the file PLUGKIT_GUEST_INIT_STAT names
//	arg:X          X is one of its arguments
//	count:N        counts its calls in this guest: true when this is the Nth
//
// PLUGKIT_GUEST_STALL=1 makes it wait forever before its handshake;
// PLUGKIT_GUEST_INIT=spin, sleep or exit makes its init spin for ever,
// sleep for ever or exit 3 (before main: a reactor's _initialize never
// returns).
// PLUGKIT_GUEST_HTTP2=1 gives its server a stats handler, which call
// streams do not carry: it then serves HTTP/2 alone and says so in its
// handshake, exactly as a guest built before call streams.
// PLUGKIT_GUEST_DESCRIBE makes it answer a describe request
// (handshake.EnvDescribe) with the describe line of the payload
// "described", as catalog.Serve does: "exit" then exits 0, "stay" waits
// forever, "fail" exits 3; without it, it ignores the request and serves.
//
// Init's config "dial" names a broker ID the host serves (a health
// service; the answer for "host" comes back as the error), "serve" an ID
// on which the guest serves a health service ("plugin-callback").
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/stats"

	"github.com/plugkit/plugkit/broker"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/plugin"
)

type store struct {
	objectstorev1.UnimplementedObjectStoreServer
	broker *broker.Broker
}

var sink [][]byte

// initFile is the file PLUGKIT_GUEST_INIT_OPEN names, opened by the init;
// initStat whether the init found PLUGKIT_GUEST_INIT_STAT's; counted
// counts the probes "count:N".
var (
	initFile *os.File
	initStat error
	counted  int
)

func init() {
	if path := os.Getenv("PLUGKIT_GUEST_INIT_OPEN"); path != "" {
		initFile, _ = os.Open(path)
	}
	if path := os.Getenv("PLUGKIT_GUEST_INIT_STAT"); path != "" {
		_, initStat = os.Stat(path)
	}
	switch os.Getenv("PLUGKIT_GUEST_INIT") {
	case "spin":
		//lint:ignore SA5002 a guest that spins from its start is what wasmhost's tests of a start that never ends run
		for {
		}
	case "sleep":
		time.Sleep(time.Hour) // select{} would be a deadlock the runtime ends
	case "exit":
		os.Exit(3)
	}
}

func probe(key string) error {
	verb, arg, _ := strings.Cut(key, ":")
	switch verb {
	case "read":
		_, err := os.ReadFile(arg)
		return err
	case "write":
		return os.WriteFile(arg, []byte("guest was here"), 0o644)
	case "dial":
		c, err := net.Dial("tcp", arg)
		if err == nil {
			c.Close()
		}
		return err
	case "alloc":
		for {
			sink = append(sink, make([]byte, 8<<20))
		}
	case "spin":
		//lint:ignore SA5002 a guest that spins is what wasmhost's tests of fuel, deadlines and stops run
		for {
		}
	case "env":
		if _, ok := os.LookupEnv(arg); !ok {
			return fmt.Errorf("%s is not set", arg)
		}
		return nil
	case "initfile":
		if initFile == nil {
			return errors.New("the init opened no file")
		}
		_, err := initFile.Stat()
		return err
	case "initstat":
		return initStat
	case "arg":
		if !slices.Contains(os.Args, arg) {
			return fmt.Errorf("%s is not an argument (%q)", arg, os.Args)
		}
		return nil
	case "count":
		counted++
		if got := fmt.Sprint(counted); arg != got {
			return fmt.Errorf("this is call %s", got)
		}
		return nil
	case "print":
		fmt.Println(arg) // after the handshake line, standard output is logs: this must reach them
		fmt.Fprintln(os.Stderr, arg)
		return nil
	}
	if strings.HasPrefix(key, "yes") {
		return nil
	}
	return errors.New("no")
}

func (s *store) Exists(_ context.Context, req *objectstorev1.ExistsRequest) (*objectstorev1.ExistsResponse, error) {
	if err := probe(req.GetKey()); err != nil {
		return nil, err
	}
	return &objectstorev1.ExistsResponse{Exists: true}, nil
}

func (s *store) Init(ctx context.Context, req *objectstorev1.InitRequest) (*objectstorev1.InitResponse, error) {
	if v := req.GetConfig()["serve"]; v != "" {
		var id uint32
		fmt.Sscan(v, &id)
		err := s.broker.Serve(ctx, id, func(srv *grpc.Server) {
			h := health.NewServer()
			h.SetServingStatus("plugin-callback", healthpb.HealthCheckResponse_SERVING)
			healthpb.RegisterHealthServer(srv, h)
		})
		if err != nil {
			return nil, err
		}
	}
	if v := req.GetConfig()["dial"]; v != "" {
		var id uint32
		fmt.Sscan(v, &id)
		conn, err := s.broker.Dial(ctx, id)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "host"})
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("host says %s", resp.GetStatus())
	}
	return &objectstorev1.InitResponse{}, nil
}

// noStats is a stats handler that records nothing.
type noStats struct{}

func (noStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (noStats) HandleRPC(context.Context, stats.RPCStats)                         {}
func (noStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (noStats) HandleConn(context.Context, stats.ConnStats)                       {}

func register(s *grpc.Server, b *broker.Broker) error {
	objectstorev1.RegisterObjectStoreServer(s, &store{broker: b})
	return nil
}

// describe answers a describe request the way PLUGKIT_GUEST_DESCRIBE
// says, if there is one.
func describe() {
	mode := os.Getenv("PLUGKIT_GUEST_DESCRIBE")
	if mode == "" || os.Getenv(handshake.EnvDescribe) != "1" {
		return
	}
	line, _ := handshake.FormatDescribe([]byte("described"))
	fmt.Println(line)
	switch mode {
	case "stay":
		time.Sleep(time.Hour) // select{} would be a deadlock the runtime ends
	case "fail":
		os.Exit(3)
	}
	os.Exit(0)
}

func main() {
	describe()
	if path := os.Getenv("PLUGKIT_GUEST_READ"); path != "" {
		// Reads a file before anything else, saying so first: a FIFO
		// nobody opens for writing keeps it in the host's open, where a
		// cancelled context does not reach.
		fmt.Println("reading")
		os.ReadFile(path)
	}
	if os.Getenv("PLUGKIT_GUEST_STALL") != "" {
		select {} // never handshakes
	}
	versions := map[int]plugin.Register{1: register, 2: register}
	if os.Getenv("PLUGKIT_GUEST_VERSIONS") == "3" {
		versions = map[int]plugin.Register{3: register}
	}
	var opts []grpc.ServerOption
	if os.Getenv("PLUGKIT_GUEST_HTTP2") != "" {
		opts = append(opts, grpc.StatsHandler(noStats{}))
	}
	plugin.Serve(plugin.Config{
		Cookie:        handshake.Cookie{Key: "PLUGKIT_TEST_COOKIE", Value: "c00kie"},
		Versions:      versions,
		ServerOptions: opts,
	})
}
