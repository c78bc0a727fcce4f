package interop_test

// The programs the test binary becomes when run with PLUGKIT_INTEROP_MODE:
//
//	gp-store          a go-plugin plugin (versions 2, 3, 4) serving ObjectStore
//	gp-hostile        gp-store that also writes hostile standard error
//	pk-store          a plugkit plugin (version 1) serving ObjectStore, which
//	                  prints to stdout and logs at every level in Init
//	pk-store-tls      pk-store with its own TLS (Config.TLSProvider), from
//	                  the PEM files in $PKTEST_TLS_DIR (see ownTLSFromEnv)
//	gp-store-tls      gp-store with its own TLS (ServeConfig.TLSProvider)
//	gp-host-block     a go-plugin host that starts pk-store, prints its pid
//	                  and blocks (to be SIGKILLed)
//	gp-host-hostile   a go-plugin host that starts gp-hostile (and panics)
//	pk-host-block     a plugkit host that starts gp-store with its sockets
//	                  under $PLUGKIT_INTEROP_SOCKDIR, prints its pid and
//	                  blocks (to be SIGKILLed)

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/broker"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	plugkit "github.com/plugkit/plugkit/plugin"
)

// The go-plugin plugins' handshake, and the same cookie as plugkit sees it.
var (
	gpHandshake = goplugin.HandshakeConfig{MagicCookieKey: "PLUGKIT_INTEROP", MagicCookieValue: "go-plugin"}
	gpCookie    = handshake.Cookie{Key: gpHandshake.MagicCookieKey, Value: gpHandshake.MagicCookieValue}
)

// The plugkit plugin's cookie, and the same as go-plugin sees it.
var (
	pkCookie    = handshake.Cookie{Key: "PLUGKIT_INTEROP", Value: "plugkit"}
	pkHandshake = goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: pkCookie.Key, MagicCookieValue: pkCookie.Value}
)

// gpStdoutLine is what the go-plugin plugin prints on List("print").
const gpStdoutLine = "hello from the go-plugin plugin's stdout"

// gpVersions are the versions the go-plugin plugins serve.
var gpVersions = []int{2, 3, 4}

func runChild(mode string) {
	switch mode {
	case "gp-store":
		serveGoPlugin(nil)
	case "gp-hostile":
		writeHostile(os.Stderr) // before the handshake: the process's stderr
		serveGoPlugin(nil)
	case "pk-store":
		servePlugkit(nil)
	case "pk-store-tls":
		servePlugkit(ownTLSFromEnv)
	case "gp-store-tls":
		serveGoPlugin(ownTLSFromEnv)
	case "gp-host-block":
		goPluginHostBlocks()
	case "gp-host-hostile":
		goPluginHostOfHostile()
	case "pk-host-block":
		plugkitHostBlocks()
	default:
		fmt.Fprintln(os.Stderr, "unknown interop mode", mode)
		os.Exit(2)
	}
}

// objectStorePlugin is go-plugin's plugin.GRPCPlugin for ObjectStore, on
// both sides: a go-plugin plugin serves gpStore, a go-plugin host gets the
// generated client.
type objectStorePlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	version int
	// broker is the host's go-plugin broker, set by GRPCClient.
	broker *goplugin.GRPCBroker
}

// GRPCServer registers the plugin's ObjectStore.
func (p *objectStorePlugin) GRPCServer(b *goplugin.GRPCBroker, s *grpc.Server) error {
	objectstorev1.RegisterObjectStoreServer(s, &gpStore{version: p.version, broker: b})
	return nil
}

// GRPCClient returns plugkit's generated ObjectStore client and keeps the
// broker.
func (p *objectStorePlugin) GRPCClient(_ context.Context, b *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	p.broker = b
	return objectstorev1.NewObjectStoreClient(c), nil
}

// serveGoPlugin serves ObjectStore with go-plugin, one plugin set per
// version in gpVersions.
func serveGoPlugin(tlsProvider func() (*tls.Config, error)) {
	exitWithParent()
	sets := map[int]goplugin.PluginSet{}
	for _, v := range gpVersions {
		sets[v] = goplugin.PluginSet{"objectstore": &objectStorePlugin{version: v}}
	}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  gpHandshake,
		VersionedPlugins: sets,
		GRPCServer:       goplugin.DefaultGRPCServer,
		TLSProvider:      tlsProvider,
	})
}

// exitWithParent ends a go-plugin plugin when its host is gone, which
// go-plugin itself does not do; it keeps a test whose host dies (the
// hostile one) from leaving plugins behind.
func exitWithParent() {
	parent := os.Getppid()
	go func() {
		for range time.Tick(100 * time.Millisecond) {
			if os.Getppid() != parent {
				os.Exit(0)
			}
		}
	}()
}

// gpStore is the go-plugin plugin's ObjectStore. List is its control
// panel:
//
//	""          -> ["version-N"], N the negotiated version
//	"dial:ID"   -> dials broker ID (served by the host), calls List there
//	"serve:ID"  -> serves fixedKeys{keys: []string{"served-by-go-plugin"}} on broker ID
//	"print"     -> prints gpStdoutLine to stdout
//	"hostile"   -> writes hostile stderr (process stderr and GRPCStdio)
type gpStore struct {
	objectstorev1.UnimplementedObjectStoreServer
	version int
	broker  *goplugin.GRPCBroker
}

// List does what the prefix says; see gpStore.
func (s *gpStore) List(ctx context.Context, req *objectstorev1.ListRequest) (*objectstorev1.ListResponse, error) {
	prefix := req.GetPrefix()
	switch {
	case strings.HasPrefix(prefix, "dial:"):
		id, err := strconv.ParseUint(strings.TrimPrefix(prefix, "dial:"), 10, 32)
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		conn, err := s.broker.Dial(uint32(id))
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "go-plugin broker Dial(%d): %v", id, err)
		}
		defer conn.Close()
		resp, err := objectstorev1.NewObjectStoreClient(conn).List(ctx, &objectstorev1.ListRequest{Prefix: "asked-by-go-plugin"})
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "calling the host's service %d: %v", id, err)
		}
		return &objectstorev1.ListResponse{Keys: append([]string{"via-broker"}, resp.GetKeys()...)}, nil
	case strings.HasPrefix(prefix, "serve:"):
		id, err := strconv.ParseUint(strings.TrimPrefix(prefix, "serve:"), 10, 32)
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		go s.broker.AcceptAndServe(uint32(id), func(opts []grpc.ServerOption) *grpc.Server {
			srv := grpc.NewServer(opts...)
			objectstorev1.RegisterObjectStoreServer(srv, fixedKeys{keys: []string{"served-by-go-plugin"}})
			return srv
		})
		return &objectstorev1.ListResponse{Keys: []string{"serving"}}, nil
	case prefix == "print":
		fmt.Println(gpStdoutLine) // go-plugin sends this over GRPCStdio
	case prefix == "hostile":
		writeHostile(os.NewFile(uintptr(syscall.Stderr), "stderr")) // the process's stderr
		writeHostile(os.Stderr)                                     // go-plugin sends this over GRPCStdio
	}
	return &objectstorev1.ListResponse{Keys: []string{fmt.Sprintf("version-%d", s.version)}}, nil
}

// Exists answers true for keys that start with "yes".
func (s *gpStore) Exists(_ context.Context, req *objectstorev1.ExistsRequest) (*objectstorev1.ExistsResponse, error) {
	return &objectstorev1.ExistsResponse{Exists: strings.HasPrefix(req.GetKey(), "yes")}, nil
}

// fixedKeys is an ObjectStore whose List answers its keys and the prefix
// it was asked for.
type fixedKeys struct {
	objectstorev1.UnimplementedObjectStoreServer
	keys []string
}

// List answers the keys, then the prefix.
func (f fixedKeys) List(_ context.Context, req *objectstorev1.ListRequest) (*objectstorev1.ListResponse, error) {
	return &objectstorev1.ListResponse{Keys: append(append([]string{}, f.keys...), req.GetPrefix())}, nil
}

// writeHostile writes what a careless or malicious plugin may write to its
// standard error. The first line panics go-plugin v1.8.0 hosts (its
// parseJSON asserts that @message is a string).
func writeHostile(w io.Writer) {
	fmt.Fprintln(w, `{"@level":"error","@message":{"an":"object"},"@module":"x"}`)
	fmt.Fprintln(w, `{"@level":7,"@message":["list"],"@timestamp":"never"}`)
	fmt.Fprintln(w, strings.Repeat("L", 200<<10))
	w.Write([]byte("\x00\xff\xfe binary \x1b[31m junk \xc3\x28\n"))
	fmt.Fprintln(w, `{"@message":"after the junk","@level":"warn"}`)
}

// The plugkit plugin's messages, which the go-plugin host must receive.
const (
	pkStdoutLine = "hello from the plugkit plugin's stdout"
	pkStderrLine = "hello from the plugkit plugin's stderr"
)

// pkLogRecords are the records the plugkit plugin logs in Init, by
// hclog level name.
var pkLogRecords = []struct {
	level   slog.Level
	name    string
	message string
}{
	{plugkit.LevelTrace, "trace", "a trace record"},
	{slog.LevelDebug, "debug", "a debug record"},
	{slog.LevelInfo, "info", "an info record"},
	{slog.LevelWarn, "warn", "disk almost full"},
	{slog.LevelError, "error", "an error record"},
}

// servePlugkit serves pkStore with plugkit, app protocol version 1.
func servePlugkit(tlsProvider func() (*tls.Config, error)) {
	logger := plugkit.NewLogger(plugkit.LevelTrace)
	plugkit.Serve(plugkit.Config{
		Cookie:      pkCookie,
		TLSProvider: tlsProvider,
		Versions: map[int]plugkit.Register{
			1: func(s *grpc.Server, b *broker.Broker) error {
				objectstorev1.RegisterObjectStoreServer(s, &pkStore{logger: logger, broker: b, objects: map[string][]byte{}})
				return nil
			},
		},
	})
}

// pkStore is the plugkit plugin's in-memory ObjectStore. Init prints to
// stdout and stderr and logs pkLogRecords. List is also a control panel:
//
//	"tls"       -> describes the caller's TLS connection
//	"dial:ID"   -> dials broker ID (served by the host), calls List there
//	"serve:ID"  -> serves fixedKeys{"served-by-plugkit-plugin"} on broker ID
type pkStore struct {
	objectstorev1.UnimplementedObjectStoreServer
	logger  *slog.Logger
	broker  *broker.Broker
	mu      sync.Mutex
	objects map[string][]byte
}

// Init prints and logs; see pkStore.
func (s *pkStore) Init(ctx context.Context, _ *objectstorev1.InitRequest) (*objectstorev1.InitResponse, error) {
	fmt.Println(pkStdoutLine)
	fmt.Fprintln(os.Stderr, pkStderrLine)
	for _, r := range pkLogRecords {
		s.logger.Log(ctx, r.level, r.message, "pct", 93)
	}
	return &objectstorev1.InitResponse{}, nil
}

// List answers the stored keys, or does what the prefix says; see pkStore.
func (s *pkStore) List(ctx context.Context, req *objectstorev1.ListRequest) (*objectstorev1.ListResponse, error) {
	prefix := req.GetPrefix()
	switch {
	case strings.HasPrefix(prefix, "dial:"):
		id, err := strconv.ParseUint(strings.TrimPrefix(prefix, "dial:"), 10, 32)
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		conn, err := s.broker.Dial(ctx, uint32(id))
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "plugkit broker Dial(%d): %v", id, err)
		}
		defer conn.Close()
		resp, err := objectstorev1.NewObjectStoreClient(conn).List(ctx, &objectstorev1.ListRequest{Prefix: "asked-by-plugkit-plugin"})
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "calling the host's service %d: %v", id, err)
		}
		return &objectstorev1.ListResponse{Keys: append([]string{"via-broker"}, resp.GetKeys()...)}, nil
	case strings.HasPrefix(prefix, "serve:"):
		id, err := strconv.ParseUint(strings.TrimPrefix(prefix, "serve:"), 10, 32)
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		if err := s.broker.Serve(ctx, uint32(id), func(srv *grpc.Server) {
			objectstorev1.RegisterObjectStoreServer(srv, fixedKeys{keys: []string{"served-by-plugkit-plugin"}})
		}); err != nil {
			return nil, status.Errorf(codes.Unavailable, "plugkit broker Serve(%d): %v", id, err)
		}
		return &objectstorev1.ListResponse{Keys: []string{"serving"}}, nil
	}
	if prefix == "tls" {
		p, _ := peer.FromContext(ctx)
		info, ok := p.AuthInfo.(credentials.TLSInfo)
		if !ok {
			return &objectstorev1.ListResponse{Keys: []string{"plaintext"}}, nil
		}
		keys := []string{"tls"}
		if len(info.State.VerifiedChains) > 0 {
			keys = append(keys, "client-cert-verified", "client-cn="+info.State.PeerCertificates[0].Subject.CommonName)
		}
		return &objectstorev1.ListResponse{Keys: keys}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.objects {
		keys = append(keys, k)
	}
	return &objectstorev1.ListResponse{Keys: keys}, nil
}

// Put stores the streamed chunks under the first message's key.
func (s *pkStore) Put(stream grpc.ClientStreamingServer[objectstorev1.PutRequest, objectstorev1.PutResponse]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	var data []byte
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		data = append(data, msg.GetChunk()...)
	}
	sum := sha256.Sum256(data)
	s.mu.Lock()
	s.objects[first.GetKey()] = data
	s.mu.Unlock()
	return stream.SendAndClose(&objectstorev1.PutResponse{Key: first.GetKey(), Size: int64(len(data)), Sha256: hex.EncodeToString(sum[:])})
}

// Get streams the object in 100 KB chunks.
func (s *pkStore) Get(req *objectstorev1.GetRequest, stream grpc.ServerStreamingServer[objectstorev1.GetResponse]) error {
	s.mu.Lock()
	data, ok := s.objects[req.GetKey()]
	s.mu.Unlock()
	if !ok {
		return status.Errorf(codes.NotFound, "no object %q", req.GetKey())
	}
	for len(data) > 0 {
		n := min(len(data), 100_000)
		if err := stream.Send(&objectstorev1.GetResponse{Chunk: data[:n]}); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// goPluginHostBlocks starts pk-store through a go-plugin host, prints
// "plugin-pid N" and blocks until it is killed (at most 30 s).
func goPluginHostBlocks() {
	exe, _ := os.Executable()
	os.Setenv(modeEnv, "pk-store") // the plugin inherits this environment
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  pkHandshake,
		Plugins:          goplugin.PluginSet{"objectstore": &objectStorePlugin{}},
		Cmd:              exec.Command(exe),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           hclog.NewNullLogger(),
	})
	rpc, err := c.Client()
	if err == nil {
		err = rpc.Ping()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-plugin host:", err)
		c.Kill()
		os.Exit(3)
	}
	fmt.Printf("plugin-pid %d\n", c.ReattachConfig().Pid)
	time.Sleep(30 * time.Second)
	c.Kill()
	os.Exit(4)
}

// plugkitHostBlocks starts gp-store from a plugkit host, prints the
// plugin's pid and blocks until it is killed.
func plugkitHostBlocks() {
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := host.Start(ctx, host.Command{
		Path: exe, Env: []string{modeEnv + "=gp-store"}, Cookie: gpCookie,
		Listen: host.Listen{UnixSocketDir: os.Getenv("PLUGKIT_INTEROP_SOCKDIR")},
	}, host.Options{Versions: gpVersions, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "plugkit host:", err)
		os.Exit(3)
	}
	fmt.Printf("plugin-pid %d\n", c.Pid())
	time.Sleep(30 * time.Second)
	c.Close()
	os.Exit(4)
}

// goPluginHostOfHostile starts gp-hostile through a go-plugin host that
// logs at info level (so it parses the plugin's stderr), then waits 5 s
// and prints "survived". go-plugin v1.8.0 panics first.
func goPluginHostOfHostile() {
	exe, _ := os.Executable()
	os.Setenv(modeEnv, "gp-hostile")
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  gpHandshake,
		VersionedPlugins: map[int]goplugin.PluginSet{4: {"objectstore": &objectStorePlugin{}}},
		Cmd:              exec.Command(exe),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Info}),
	})
	if _, err := c.Client(); err != nil {
		fmt.Fprintln(os.Stderr, "go-plugin host:", err)
	}
	time.Sleep(5 * time.Second)
	c.Kill()
	fmt.Println("survived")
}
