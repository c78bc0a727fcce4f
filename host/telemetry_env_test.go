package host_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	_ "github.com/plugkit/plugkit/plugin/traceexport" // this binary, run as a plugin, exports its spans
)

// TestUnknownExporterLeavesPluginServing: when the host's
// OTEL_TRACES_EXPORTER names an exporter a plugin does not build, the
// launched plugin still serves and carries the host's trace context into
// its calls and log records, and its warning, which says what to set,
// reaches the host's log.
func TestUnknownExporterLeavesPluginServing(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	t.Setenv("OTEL_SERVICE_NAME", "traced-test-plugin")
	tp, exp := newTracer(t)
	var logs testutil.Buffer
	cfg := config(t, "traced")
	cfg.InheritEnv = []string{}
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	cfg.Telemetry = host.Telemetry{TracerProvider: tp}
	c := start(t, cfg)
	root, err := tracedInit(t, tp, c, serveHealth(t, c))
	hostCall := spanOf(t, exp, root.TraceID(), "objectstore.v1.ObjectStore/Init", trace.SpanKindClient)
	want := fmt.Sprintf("trace=%s span=%s traceparent=true service=traced-test-plugin callback=host says SERVING", root.TraceID(), hostCall.SpanContext.SpanID())
	if msg := status.Convert(err).Message(); msg != want {
		t.Fatalf("Init: %q\nwant %q", msg, want)
	}
	c.Close()
	checkTracedRecord(t, logs.String(), root.TraceID().String(), hostCall.SpanContext.SpanID().String())
	for _, s := range []string{"spans are not exported", `OTEL_TRACES_EXPORTER=\"zipkin\"`, "use otlp, console or none"} {
		if !strings.Contains(logs.String(), s) {
			t.Errorf("the host's log has no %q from the plugin:\n%s", s, logs.String())
		}
	}
}

// otlpReceiver is a loopback OTLP trace collector, on gRPC or on HTTP
// (http/protobuf), that keeps the spans it is sent.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// ServeHTTP takes OTLP/HTTP's POST /v1/traces.
func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var msg coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	if err != nil || req.URL.Path != "/v1/traces" {
		http.Error(w, fmt.Sprintf("%s: %v", req.URL.Path, err), http.StatusBadRequest)
		return
	}
	resp, _ := r.Export(req.Context(), &msg)
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// listen serves r on a loopback port with protocol and returns its
// endpoint, for OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *otlpReceiver) listen(t *testing.T, protocol string) string {
	t.Helper()
	if protocol != "grpc" {
		srv := httptest.NewServer(r)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, r)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return "http://" + lis.Addr().String()
}

// serverSpan waits until r has the server span of trace tr named name,
// and returns its parent span ID.
func (r *otlpReceiver) serverSpan(t *testing.T, tr trace.TraceID, name string) []byte {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		for _, s := range r.spans {
			if bytes.Equal(s.GetTraceId(), tr[:]) && s.GetName() == name && s.GetKind() == tracepb.Span_SPAN_KIND_SERVER {
				r.mu.Unlock()
				return s.GetParentSpanId()
			}
		}
		n := len(r.spans)
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the collector got %d spans, none the server span %q of trace %s", n, name, tr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPluginExportsOverOTLP: a launched plugin, given the host's
// OTEL_TRACES_EXPORTER=otlp, the protocol and the endpoint, sends its
// serving span, the child of the host's call, to that collector over
// gRPC and over HTTP.
func TestPluginExportsOverOTLP(t *testing.T) {
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(strings.ReplaceAll(protocol, "/", "_"), func(t *testing.T) {
			var recv otlpReceiver
			t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.listen(t, protocol))
			tp, exp := newTracer(t)
			cfg := config(t, "traced")
			cfg.Telemetry = host.Telemetry{TracerProvider: tp}
			c := start(t, cfg)
			root, _ := tracedInit(t, tp, c, serveHealth(t, c))
			hostCall := spanOf(t, exp, root.TraceID(), "objectstore.v1.ObjectStore/Init", trace.SpanKindClient)
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err) // the plugin flushes its spans as it stops
			}
			parent := recv.serverSpan(t, root.TraceID(), "objectstore.v1.ObjectStore/Init")
			if want := hostCall.SpanContext.SpanID(); !bytes.Equal(parent, want[:]) {
				t.Errorf("the plugin's serving span has parent %x, want the host's call %s", parent, want)
			}
		})
	}
}
