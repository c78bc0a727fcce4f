package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/broker"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/plugintest"
)

// tracedStore is callbackStore that also says what trace context its
// call had: it logs "traced call" with the call's context, and its error
// names the trace and parent span IDs it saw and the telemetry variables
// of its environment.
type tracedStore struct {
	callbackStore
	logger *slog.Logger
}

func (s *tracedStore) Init(ctx context.Context, req *objectstorev1.InitRequest) (*objectstorev1.InitResponse, error) {
	s.logger.InfoContext(ctx, "traced call")
	_, err := s.callbackStore.Init(ctx, req)
	sc := trace.SpanContextFromContext(ctx)
	return nil, fmt.Errorf("trace=%s span=%s traceparent=%t service=%s callback=%v",
		sc.TraceID(), sc.SpanID(), os.Getenv("TRACEPARENT") != "", os.Getenv("OTEL_SERVICE_NAME"), err)
}

// newTracer is an SDK TracerProvider that records every span in memory.
func newTracer(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp, exp
}

// serveHealth serves a health service on the host's broker and returns
// its ID, for the plugin to call back.
func serveHealth(t *testing.T, c *host.Client) uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id := c.Broker().NextID()
	h := health.NewServer()
	h.SetServingStatus("host", healthpb.HealthCheckResponse_SERVING)
	if err := c.Broker().Serve(ctx, id, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, h) }); err != nil {
		t.Fatal(err)
	}
	return id
}

// tracedInit makes the Init call whose callback the plugin makes, under
// a root span, and returns the root's span context and the call's error.
func tracedInit(t *testing.T, tp trace.TracerProvider, c *host.Client, id uint32) (trace.SpanContext, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx, root := tp.Tracer("test").Start(ctx, "test root")
	_, err := objectstorev1.NewObjectStoreClient(c.Conn()).Init(ctx, &objectstorev1.InitRequest{Config: map[string]string{"dial": fmt.Sprint(id)}})
	root.End()
	return root.SpanContext(), err
}

// spanOf finds the span of trace named name of kind, or fails.
func spanOf(t *testing.T, exp *tracetest.InMemoryExporter, tr trace.TraceID, name string, kind trace.SpanKind) tracetest.SpanStub {
	t.Helper()
	// A server span ends once its answer is written, so the caller may
	// hold the answer a moment before the span reaches the exporter.
	deadline := time.Now().Add(5 * time.Second)
	for {
		spans := exp.GetSpans()
		for _, s := range spans {
			if s.SpanContext.TraceID() == tr && s.Name == name && s.SpanKind == kind {
				return s
			}
		}
		if time.Now().After(deadline) {
			var have []string
			for _, s := range spans {
				have = append(have, fmt.Sprintf("%s(%s, trace %s)", s.Name, s.SpanKind, s.SpanContext.TraceID()))
			}
			t.Fatalf("no %s span %q in trace %s within 5s; spans: %s", kind, name, tr, strings.Join(have, ", "))
			return tracetest.SpanStub{}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTraceCrossesPluginAndCallback: one trace from a host call through
// the plugin (serving in this process, with its own TracerProvider on
// the same exporter) and back through a brokered callback to the host,
// each span the child of the one before.
func TestTraceCrossesPluginAndCallback(t *testing.T) {
	tp, exp := newTracer(t)
	cfg := plugin.Config{TracerProvider: tp, Versions: map[int]plugin.Register{1: func(s *grpc.Server, b *broker.Broker) error {
		objectstorev1.RegisterObjectStoreServer(s, &tracedStore{callbackStore: callbackStore{broker: b}, logger: slog.New(slog.DiscardHandler)})
		return nil
	}}}
	c := plugintest.Start(t, cfg, plugintest.Options{Logger: testutil.Logger(t), Telemetry: host.Telemetry{TracerProvider: tp}})
	root, err := tracedInit(t, tp, c, serveHealth(t, c))
	if err == nil || !strings.Contains(err.Error(), "trace="+root.TraceID().String()) || !strings.Contains(err.Error(), "callback=host says SERVING") {
		t.Fatalf("Init: %v; want the plugin to see trace %s and the callback to succeed", err, root.TraceID())
	}
	tr := root.TraceID()
	hostCall := spanOf(t, exp, tr, "objectstore.v1.ObjectStore/Init", trace.SpanKindClient)
	pluginCall := spanOf(t, exp, tr, "objectstore.v1.ObjectStore/Init", trace.SpanKindServer)
	pluginCallback := spanOf(t, exp, tr, "grpc.health.v1.Health/Check", trace.SpanKindClient)
	hostCallback := spanOf(t, exp, tr, "grpc.health.v1.Health/Check", trace.SpanKindServer)
	for _, link := range []struct {
		what          string
		child, parent trace.SpanContext
	}{
		{"host's call <- root", hostCall.Parent, root},
		{"plugin's serving <- host's call", pluginCall.Parent, hostCall.SpanContext},
		{"plugin's callback <- plugin's serving", pluginCallback.Parent, pluginCall.SpanContext},
		{"host's brokered serving <- plugin's callback", hostCallback.Parent, pluginCallback.SpanContext},
	} {
		if link.child.SpanID() != link.parent.SpanID() {
			t.Errorf("%s: parent %s, want %s", link.what, link.child.SpanID(), link.parent.SpanID())
		}
	}
	if !pluginCall.Parent.IsRemote() || !hostCallback.Parent.IsRemote() {
		t.Error("the serving spans' parents are not remote: the context did not cross the connection")
	}
}

// TestTraceReachesLaunchedPlugin: a launched plugin gets TRACEPARENT and
// the host's OTEL_* variables even with InheritEnv passing nothing; its
// calls carry the host's trace, over sockets and over a multiplexed
// broker, back through its callback; its log records made in the call
// carry the call's trace_id and span_id.
func TestTraceReachesLaunchedPlugin(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "the-host") // the host's own: the plugin is named after itself
	for _, multiplex := range []bool{false, true} {
		t.Run(fmt.Sprintf("multiplex=%v", multiplex), func(t *testing.T) {
			tp, exp := newTracer(t)
			var logs testutil.Buffer
			cfg := config(t, "traced")
			cfg.InheritEnv = []string{}
			cfg.MultiplexBroker = multiplex
			cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
			cfg.Telemetry = host.Telemetry{TracerProvider: tp}
			c := start(t, cfg)
			root, err := tracedInit(t, tp, c, serveHealth(t, c))
			hostCall := spanOf(t, exp, root.TraceID(), "objectstore.v1.ObjectStore/Init", trace.SpanKindClient)
			want := fmt.Sprintf("trace=%s span=%s traceparent=true service=test-traced callback=host says SERVING", root.TraceID(), hostCall.SpanContext.SpanID())
			if msg := status.Convert(err).Message(); msg != want {
				t.Fatalf("Init: %q\nwant %q", msg, want)
			}
			// The plugin has no exporter: its spans pass the context on
			// unrecorded, so the host's brokered serving is the child of
			// the host's call.
			hostCallback := spanOf(t, exp, root.TraceID(), "grpc.health.v1.Health/Check", trace.SpanKindServer)
			if hostCallback.Parent.SpanID() != hostCall.SpanContext.SpanID() {
				t.Errorf("callback's parent %s, want the host's call %s", hostCallback.Parent.SpanID(), hostCall.SpanContext.SpanID())
			}
			c.Close()
			checkTracedRecord(t, logs.String(), root.TraceID().String(), hostCall.SpanContext.SpanID().String())
		})
	}
}

// checkTracedRecord finds the plugin's "traced call" record in the
// host's JSON log and checks its IDs.
func checkTracedRecord(t *testing.T, logs, traceID, spanID string) {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "traced call" {
			continue
		}
		fields, _ := rec["fields"].(map[string]any) // the plugin's own fields
		if fields["trace_id"] != traceID || fields["span_id"] != spanID {
			t.Errorf("record %s: want trace_id %s span_id %s", line, traceID, spanID)
		}
		return
	}
	t.Errorf("no \"traced call\" record in the host's log:\n%s", logs)
}

// hostileTraceStore's Init calls the host's brokered health service (ID
// in config "dial") floodCalls times, each with trace context the host
// must not trust: malformed traceparents, an over-long tracestate, a
// baggage header past its limits.
type hostileTraceStore struct {
	objectstorev1.UnimplementedObjectStoreServer
	broker *broker.Broker
}

const floodCalls = 10

var hostileHeaders = [][]string{
	{"traceparent", "garbage"},
	{"traceparent", "00-00000000000000000000000000000000-0000000000000000-01"},
	{"traceparent", "ff-" + strings.Repeat("a", 32) + "-" + strings.Repeat("b", 16) + "-01"},
	{"traceparent", "00-" + strings.Repeat("z", 32) + "-" + strings.Repeat("b", 16) + "-01", "tracestate", strings.Repeat("k=v,", 2000)},
	{"baggage", strings.Repeat("key=value,", 1500)},
}

func (s hostileTraceStore) Init(ctx context.Context, req *objectstorev1.InitRequest) (*objectstorev1.InitResponse, error) {
	var id uint32
	fmt.Sscan(req.GetConfig()["dial"], &id)
	conn, err := s.broker.Dial(ctx, id)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	for i := range floodCalls {
		// A context of its own: the plugin sends only what it forges.
		callCtx := metadata.NewOutgoingContext(context.WithoutCancel(context.Background()), metadata.Pairs(hostileHeaders[i%len(hostileHeaders)]...))
		callCtx, cancel := context.WithTimeout(callCtx, 5*time.Second)
		_, err := healthpb.NewHealthClient(conn).Check(callCtx, &healthpb.HealthCheckRequest{Service: "host"})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("callback %d: %w", i, err)
		}
	}
	return &objectstorev1.InitResponse{}, nil
}

// TestHostileTraceContextFromPlugin: a plugin that sends malformed trace
// context on a flood of callbacks gets its answers, its spans are roots
// of their own (never children of forged IDs), and the host's tracing
// goes on working: its next call is traced with its parent links right.
func TestHostileTraceContextFromPlugin(t *testing.T) {
	tp, exp := newTracer(t)
	cfg := plugin.Config{Versions: map[int]plugin.Register{1: func(s *grpc.Server, b *broker.Broker) error {
		objectstorev1.RegisterObjectStoreServer(s, hostileTraceStore{broker: b})
		return nil
	}}}
	c := plugintest.Start(t, cfg, plugintest.Options{Logger: testutil.Logger(t), Telemetry: host.Telemetry{TracerProvider: tp}})
	id := serveHealth(t, c)
	if _, err := tracedInit(t, tp, c, id); err != nil {
		t.Fatalf("Init with the flood of callbacks: %v", err)
	}
	// The last callback's server span ends once its answer is written, a
	// moment after Init may have returned: wait for every one.
	var callbacks []tracetest.SpanStub
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		callbacks = callbacks[:0]
		for _, s := range exp.GetSpans() {
			if s.Name == "grpc.health.v1.Health/Check" && s.SpanKind == trace.SpanKindServer {
				callbacks = append(callbacks, s)
			}
		}
		if len(callbacks) >= floodCalls || time.Now().After(deadline) {
			break
		}
	}
	for _, s := range callbacks {
		if !s.SpanContext.IsValid() || s.Parent.IsValid() {
			t.Fatalf("a callback's span %s has parent %s: forged trace context was trusted", s.SpanContext.SpanID(), s.Parent.SpanID())
		}
	}
	if len(callbacks) != floodCalls {
		t.Errorf("%d spans of callbacks, want %d", len(callbacks), floodCalls)
	}
	// The host's own tracing still works.
	exp.Reset()
	root, err := tracedInit(t, tp, c, serveHealth(t, c))
	if err != nil {
		t.Fatalf("Init after the flood: %v", err)
	}
	hostCall := spanOf(t, exp, root.TraceID(), "objectstore.v1.ObjectStore/Init", trace.SpanKindClient)
	if hostCall.Parent.SpanID() != root.SpanID() {
		t.Errorf("the host's call after the flood has parent %s, want %s", hostCall.Parent.SpanID(), root.SpanID())
	}
}

// TestTraceCrossesToPluginService: a call to a plugin service (host.Dial)
// is traced, and the service's serving span is its child.
func TestTraceCrossesToPluginService(t *testing.T) {
	tp, exp := newTracer(t)
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := remotetest.Start(t, pki.ServiceEnv("127.0.0.1:0"), "a", plugin.Config{TracerProvider: tp})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := host.Dial(ctx, host.Remote{Endpoints: []string{addr}},
		host.Options{Security: host.TLS(pki.HostTLS()), Versions: []int{1}, Name: "svc", Telemetry: host.Telemetry{TracerProvider: tp}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, root := tp.Tracer("test").Start(ctx, "test root")
	_, err = testgrpc.NewTestServiceClient(c.Conn()).UnaryCall(ctx, &testgrpc.SimpleRequest{})
	root.End()
	if err != nil {
		t.Fatal(err)
	}
	tr := root.SpanContext().TraceID()
	call := spanOf(t, exp, tr, "grpc.testing.TestService/UnaryCall", trace.SpanKindClient)
	served := spanOf(t, exp, tr, "grpc.testing.TestService/UnaryCall", trace.SpanKindServer)
	if call.Parent.SpanID() != root.SpanContext().SpanID() || served.Parent.SpanID() != call.SpanContext.SpanID() || !served.Parent.IsRemote() {
		t.Errorf("parents: call %s (want root %s), served %s (want the call %s, remote)", call.Parent.SpanID(), root.SpanContext().SpanID(), served.Parent.SpanID(), call.SpanContext.SpanID())
	}
}
