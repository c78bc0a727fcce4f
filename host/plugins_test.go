package host_test

// The test binary doubles as every plugin the tests need: started with
// PLUGKIT_TEST_PLUGIN=MODE it becomes that plugin instead of running
// tests (see TestMain).

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/automtls"
	"github.com/plugkit/plugkit/broker"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

var testCookie = handshake.Cookie{Key: "PLUGKIT_TEST_COOKIE", Value: "c00kie"}

const modeEnv = "PLUGKIT_TEST_PLUGIN"

// store answers Exists with true for keys that start with "yes" and says
// which protocol version served the call.
type store struct {
	objectstorev1.UnimplementedObjectStoreServer
	version int
}

func (s store) Exists(_ context.Context, req *objectstorev1.ExistsRequest) (*objectstorev1.ExistsResponse, error) {
	return &objectstorev1.ExistsResponse{Exists: strings.HasPrefix(req.GetKey(), "yes")}, nil
}

// Get answers with one message of the key's length in MiB ("6" -> 6 MiB),
// beyond gRPC's default 4 MiB limit.
func (s store) Get(req *objectstorev1.GetRequest, stream grpc.ServerStreamingServer[objectstorev1.GetResponse]) error {
	var mib int
	fmt.Sscan(req.GetKey(), &mib)
	return stream.Send(&objectstorev1.GetResponse{Chunk: make([]byte, mib<<20)})
}

func (s store) List(context.Context, *objectstorev1.ListRequest) (*objectstorev1.ListResponse, error) {
	fmt.Println("list called") // goes over GRPCStdio
	return &objectstorev1.ListResponse{Keys: []string{fmt.Sprintf("version-%d", s.version)}}, nil
}

func register(version int) plugin.Register {
	return func(s *grpc.Server, _ *broker.Broker) error {
		objectstorev1.RegisterObjectStoreServer(s, store{version: version})
		return nil
	}
}

func runTestPlugin(mode string) {
	if fakePlugin(mode) {
		os.Exit(0)
	}
	cfg := plugin.Config{Cookie: testCookie, Versions: map[int]plugin.Register{1: register(1)}}
	switch mode {
	case "kv", "describer":
	case "versions":
		cfg.Versions = map[int]plugin.Register{2: register(2), 3: register(3), 4: register(4)}
	case "callback":
		cfg.Versions = map[int]plugin.Register{1: func(s *grpc.Server, b *broker.Broker) error {
			objectstorev1.RegisterObjectStoreServer(s, &callbackStore{broker: b})
			return nil
		}}
	case "traced":
		cfg.Logger = plugin.NewLogger(slog.LevelInfo)
		cfg.Versions = map[int]plugin.Register{1: func(s *grpc.Server, b *broker.Broker) error {
			objectstorev1.RegisterObjectStoreServer(s, &tracedStore{callbackStore: callbackStore{broker: b}, logger: cfg.Logger})
			return nil
		}}
	case "panicky":
		cfg.Versions = map[int]plugin.Register{1: func(s *grpc.Server, _ *broker.Broker) error {
			objectstorev1.RegisterObjectStoreServer(s, panicStore{})
			return nil
		}}
	case "hostile":
		w := os.NewFile(uintptr(syscall.Stderr), "stderr")
		fmt.Fprintln(w, `{"@level":"error","@message":{"an":"object"},"@module":"x"}`)
		fmt.Fprintln(w, `{"@level":7,"@message":["list"],"@timestamp":"never"}`)
		fmt.Fprintln(w, strings.Repeat("L", 200<<10))
		w.Write([]byte("\x00\xff\xfe binary \x1b[31m junk \xc3\x28\n"))
		fmt.Fprintln(w, `{"@message":"after the junk","@level":"warn"}`)
		fmt.Fprintln(w, `[WARN] a text warning`)
	case "grandchild":
		// Starts a long sleep of its own (this binary in mode "sleep",
		// which every system has) and serves as kv.
		self, err := os.Executable()
		if err != nil {
			os.Exit(5)
		}
		sleep := exec.Command(self)
		sleep.Env = append(os.Environ(), modeEnv+"=sleep")
		if err := sleep.Start(); err != nil {
			os.Exit(5)
		}
		os.WriteFile(os.Getenv("PLUGKIT_TEST_PIDFILE"), []byte(strconv.Itoa(sleep.Process.Pid)), 0o644)
	case "wrongcert":
		// A real plugin that advertises somebody else's certificate.
		other, _ := automtls.New()
		r, w, _ := os.Pipe()
		stdout := os.Stdout
		go func() {
			buf := make([]byte, 4096)
			n, _ := r.Read(buf)
			l, err := handshake.Parse(string(buf[:n]))
			if err != nil {
				os.Exit(5)
			}
			l.ServerCert = other.DER()
			fmt.Fprintln(stdout, l.String())
		}()
		// plugin.Serve, with the handshake line going through the pipe.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		err := plugin.RunIn(ctx, cfg, plugin.Harness{Handshake: w})
		stop()
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown test plugin mode", mode)
		os.Exit(2)
	}
	plugin.Serve(cfg)
}

// fakeLines are what the modes that only print a line print, before they
// wait to be stopped.
var fakeLines = map[string]string{
	"garbage": "Welcome to my plugin!",
	"core2":   "2|1|unix|/tmp/x|grpc|",
	"netrpc":  "1|1|unix|/tmp/x|netrpc|",
	"udp":     "1|1|udp|127.0.0.1:1|grpc|",
	"badcert": "1|1|unix|/tmp/x|grpc|AAAA",
}

// fakePlugin runs a mode that does not serve through plugin.Serve and
// reports true when it is done; for the other modes it does nothing and
// reports false.
func fakePlugin(mode string) bool {
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "boom: the config file /etc/x is missing")
		os.Exit(3)
	case "silent":
		time.Sleep(time.Minute)
	case "garbage", "core2", "netrpc", "udp", "badcert":
		fmt.Println(fakeLines[mode])
		time.Sleep(time.Minute)
	case "hijack":
		// Names another process's socket as its own.
		fmt.Printf("1|1|unix|%s|grpc|\n", os.Getenv("PLUGKIT_TEST_VICTIM"))
		time.Sleep(time.Minute)
	case "listen":
		// Listens on a unix socket (as whatever user it was started
		// as), says so, and keeps it until stdin closes.
		l, err := net.Listen("unix", os.Getenv("PLUGKIT_TEST_SOCKET"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(5)
		}
		fmt.Println("ready")
		buf := make([]byte, 1)
		os.Stdin.Read(buf)
		l.Close()
	case "listentcp":
		// Listens on loopback TCP, says "ready <address>", prints
		// "accepted" for each connection it takes, until stdin closes.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(5)
		}
		fmt.Println("ready", l.Addr())
		go func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				fmt.Println("accepted")
				conn.Close()
			}
		}()
		buf := make([]byte, 1)
		os.Stdin.Read(buf)
		l.Close()
	case "unflushed":
		// Writes its line into a buffer it never flushes, as Python
		// and C do with a pipe for stdout.
		w := bufio.NewWriter(os.Stdout)
		fmt.Fprintln(w, "1|1|unix|/tmp/x|grpc|")
		time.Sleep(time.Minute)
	case "nocontroller":
		nocontrollerPlugin()
	case "partial":
		fmt.Print("1|1|unix")
	case "jobhost":
		jobHost()
	case "sleep":
		// The grandchild plugin's child: it only waits to be killed.
		time.Sleep(300 * time.Second)
	case "notserving", "stubborn", "deaf":
		rawPlugin(mode)
	case "knockflood":
		knockFloodPlugin()
	case "stdiobomb":
		stdioBombPlugin()
	case "stdiohost":
		stdioBombHost()
	case "describer":
		// Asked for its description, writes it and exits; otherwise
		// serves as "kv".
		if os.Getenv(handshake.EnvDescribe) != "1" {
			return false
		}
		line, _ := handshake.FormatDescribe([]byte("described"))
		fmt.Println(line)
	default:
		return false
	}
	return true
}

// rawPlugin is a hand-made plain-text gRPC plugin: with mode "notserving"
// its health says NOT_SERVING; with "stubborn" it has no controller and
// ignores SIGTERM, so only SIGKILL stops it; "deaf" is stubborn with a
// controller whose Shutdown never answers.
func rawPlugin(mode string) {
	signal.Ignore(syscall.SIGTERM, os.Interrupt)
	st := healthpb.HealthCheckResponse_SERVING
	if mode == "notserving" {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	srv, ln := rawServer(st)
	if mode == "deaf" {
		pluginpb.RegisterGRPCControllerServer(srv, deafController{})
	}
	fmt.Printf("1|1|%s|%s|grpc|\n", ln.Addr().Network(), ln.Addr())
	srv.Serve(ln)
}

// rawServer makes what every hand-made plugin below starts from: a unix
// listener in the host's socket directory (loopback TCP on Windows, as
// plugkit's plugins there) and a gRPC server (with opts)
// whose health service reports st. The caller registers its services,
// prints its handshake line and serves.
func rawServer(st healthpb.HealthCheckResponse_ServingStatus, opts ...grpc.ServerOption) (*grpc.Server, net.Listener) {
	var ln net.Listener
	var err error
	if osdep.UnixSockets {
		dir, _ := os.MkdirTemp(os.Getenv(handshake.EnvUnixSocketDir), "raw")
		ln, err = net.Listen("unix", dir+"/s")
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		os.Exit(4)
	}
	srv := grpc.NewServer(opts...)
	h := health.NewServer()
	h.SetServingStatus(wire.HealthService, st)
	healthpb.RegisterHealthServer(srv, h)
	return srv, ln
}

// nocontrollerPlugin serves the objectstore with AutoMTLS, health and
// nothing else, as a plugin in another language might: no GRPCController,
// and SIGTERM ends it (the default action).
func nocontrollerPlugin() {
	host, err := automtls.ParsePEM([]byte(os.Getenv(handshake.EnvClientCert)))
	if err != nil {
		os.Exit(6)
	}
	id, err := automtls.New()
	if err != nil {
		os.Exit(6)
	}
	srv, ln := rawServer(healthpb.HealthCheckResponse_SERVING, grpc.Creds(credentials.NewTLS(id.Config(host))))
	objectstorev1.RegisterObjectStoreServer(srv, store{version: 1})
	l := handshake.Line{CoreVersion: 1, AppVersion: 1, Network: ln.Addr().Network(), Address: ln.Addr().String(), Protocol: handshake.ProtocolGRPC, ServerCert: id.DER()}
	fmt.Println(l.String())
	srv.Serve(ln)
}

// deafController takes the Shutdown RPC and never answers it.
type deafController struct {
	pluginpb.UnimplementedGRPCControllerServer
}

func (deafController) Shutdown(ctx context.Context, _ *pluginpb.Empty) (*pluginpb.Empty, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// callbackStore uses the broker from Init: config "dial" names a service ID
// the host serves (a health service whose status for "host" the plugin
// reports back as an error message), config "serve" an ID on which the
// plugin serves a health service of its own.
type callbackStore struct {
	objectstorev1.UnimplementedObjectStoreServer
	broker *broker.Broker
}

func (s *callbackStore) Init(ctx context.Context, req *objectstorev1.InitRequest) (*objectstorev1.InitResponse, error) {
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

// knockFloodKnocks is how many knocks the "knockflood" plugin sends.
const knockFloodKnocks = 200_000

// knockFloodPlugin is a hostile plugin: on the host's broker stream it
// sends knockFloodKnocks knocks for services nobody serves and never reads
// the answers; then it says "knock flood sent" on stderr, or "knock flood
// ended" when the host ended the stream first (a host that gives up on a
// plugin not reading). It multiplexes when the host asks.
func knockFloodPlugin() {
	srv, ln := rawServer(healthpb.HealthCheckResponse_SERVING)
	var serveLn net.Listener = ln
	muxField := ""
	if os.Getenv(handshake.EnvMultiplexGRPC) == "true" {
		serveLn = brokerwire.ListenMux(ln).Main()
		muxField = "|true"
	}
	pluginpb.RegisterGRPCBrokerServer(srv, knockFlood{})
	fmt.Printf("1|1|%s|%s|grpc|%s\n", ln.Addr().Network(), ln.Addr(), muxField)
	srv.Serve(serveLn)
}

type knockFlood struct {
	pluginpb.UnimplementedGRPCBrokerServer
}

func (knockFlood) StartStream(s grpc.BidiStreamingServer[pluginpb.ConnInfo, pluginpb.ConnInfo]) error {
	for i := range knockFloodKnocks {
		if err := s.Send(&pluginpb.ConnInfo{ServiceId: uint32(1000 + i), Knock: &pluginpb.ConnInfo_Knock{Knock: true}}); err != nil {
			fmt.Fprintf(os.Stderr, "knock flood ended after %d knocks: %v\n", i, err)
			return err
		}
	}
	fmt.Fprintln(os.Stderr, "knock flood sent")
	<-s.Context().Done()
	return nil
}

// jobHost is a host that starts the "grandchild" plugin, writes the
// plugin's pid and its child's, as "plugin child", to PLUGKIT_TEST_PIDFILE
// and waits to be killed (TestHostDeathKillsThePluginsChildren).
func jobHost() {
	self, err := os.Executable()
	if err != nil {
		os.Exit(5)
	}
	childFile := os.Getenv("PLUGKIT_TEST_PIDFILE") + ".child"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := host.Start(ctx, host.Command{
		Path:   self,
		Env:    []string{modeEnv + "=grandchild", "PLUGKIT_TEST_PIDFILE=" + childFile},
		Cookie: testCookie,
	}, host.Options{Versions: []int{1}, Name: "grandchild", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		os.Exit(6)
	}
	child, err := os.ReadFile(childFile)
	if err != nil {
		os.Exit(7)
	}
	os.WriteFile(os.Getenv("PLUGKIT_TEST_PIDFILE"), []byte(fmt.Sprintf("%d %s", c.Pid(), child)), 0o644)
	time.Sleep(300 * time.Second)
}
