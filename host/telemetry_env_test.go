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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
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
	t.Setenv("OTEL_SERVICE_NAME", "the-host") // the host's own: not the plugin's
	tp, exp := newTracer(t)
	var logs testutil.Buffer
	cfg := config(t, "traced")
	cfg.InheritEnv = []string{}
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	cfg.Telemetry = host.Telemetry{TracerProvider: tp}
	c := start(t, cfg)
	root, err := tracedInit(t, tp, c, serveHealth(t, c))
	hostCall := spanOf(t, exp, root.TraceID(), "objectstore.v1.ObjectStore/Init", trace.SpanKindClient)
	want := fmt.Sprintf("trace=%s span=%s traceparent=true service=test-traced callback=host says SERVING", root.TraceID(), hostCall.SpanContext.SpanID())
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
	mu        sync.Mutex
	spans     []*tracepb.Span
	resources []map[string]string // of each span, its resource's string attributes
}

func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		res := map[string]string{}
		for _, kv := range rs.GetResource().GetAttributes() {
			res[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				r.spans = append(r.spans, sp)
				r.resources = append(r.resources, res)
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// received returns how many spans r has, and how many traces they make.
func (r *otlpReceiver) received() (spans, traces int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := map[string]bool{}
	for _, s := range r.spans {
		ids[string(s.GetTraceId())] = true
	}
	return len(r.spans), len(ids)
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
	parent, _ := r.serverSpanResource(t, tr, name)
	return parent
}

// serverSpanResource is serverSpan with the span's resource attributes.
func (r *otlpReceiver) serverSpanResource(t *testing.T, tr trace.TraceID, name string) ([]byte, map[string]string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		for i, s := range r.spans {
			if bytes.Equal(s.GetTraceId(), tr[:]) && s.GetName() == name && s.GetKind() == tracepb.Span_SPAN_KIND_SERVER {
				r.mu.Unlock()
				return s.GetParentSpanId(), r.resources[i]
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
// OTEL_* variables as docs/observability.md sets them up for a
// collector's gRPC port and for its HTTP port (with the collector's
// address replaced by a loopback receiver's), sends its serving span,
// the child of the host's call, to that collector over gRPC and over
// HTTP.
func TestPluginExportsOverOTLP(t *testing.T) {
	blocks := docCollectorSetups(t)
	if len(blocks) != 2 {
		t.Fatalf("docs/observability.md shows %d collector set-ups, want 2 (gRPC on 4317, HTTP on 4318)", len(blocks))
	}
	for _, block := range blocks {
		protocol := "http/protobuf"
		for _, kv := range block {
			if v, ok := strings.CutPrefix(kv, "OTEL_EXPORTER_OTLP_PROTOCOL="); ok {
				protocol = v
			}
		}
		t.Run(strings.ReplaceAll(protocol, "/", "_"), func(t *testing.T) {
			var recv otlpReceiver
			endpoint := recv.listen(t, protocol)
			for _, kv := range block {
				k, v, _ := strings.Cut(kv, "=")
				v = strings.NewReplacer("http://collector:4317", endpoint, "http://collector:4318", endpoint).Replace(v)
				t.Setenv(k, v)
			}
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

// docCollectorSetups reads the sh blocks of docs/observability.md's
// section "Sending spans to a collector": each a list of VAR=value.
func docCollectorSetups(t *testing.T) [][]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### Sending spans to a collector\n")
	if !ok {
		t.Fatal(`docs/observability.md has no section "### Sending spans to a collector"`)
	}
	section, _, _ = strings.Cut(section, "\n#")
	var blocks [][]string
	for _, part := range strings.Split(section, "```sh\n")[1:] {
		body, _, _ := strings.Cut(part, "```")
		blocks = append(blocks, strings.Fields(body))
	}
	return blocks
}

// otlpEnv points the OTEL_* environment of this process (the host's,
// which its plugins inherit) at a new loopback collector speaking
// protocol, and returns it.
func otlpEnv(t *testing.T, protocol string) *otlpReceiver {
	recv := &otlpReceiver{}
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.listen(t, protocol))
	return recv
}

// TestPluginSpansCarryTheirOwnService (issue 40 point 7): a launched
// plugin's spans belong to a service of its own, named after the plugin,
// with the host's service (its resource's service.name, not the
// OTEL_SERVICE_NAME of its environment) as plugkit.host.service.name.
func TestPluginSpansCarryTheirOwnService(t *testing.T) {
	recv := otlpEnv(t, "grpc")
	t.Setenv("OTEL_SERVICE_NAME", "from-the-environment")
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "billing"))))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	cfg := config(t, "traced")
	cfg.Telemetry = host.Telemetry{TracerProvider: tp}
	c := start(t, cfg)
	root, _ := tracedInit(t, tp, c, serveHealth(t, c))
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, res := recv.serverSpanResource(t, root.TraceID(), "objectstore.v1.ObjectStore/Init")
	if res["service.name"] != "test-traced" || res["plugkit.host.service.name"] != "billing" {
		t.Errorf("the plugin's span has service.name=%q plugkit.host.service.name=%q; want the plugin's name, test-traced, and the host's, billing",
			res["service.name"], res["plugkit.host.service.name"])
	}
}

// TestUntracedHostsPluginExportsNothing (issue 40 point 8): a host that
// does not trace, whose environment has OTEL_* variables that name an
// exporter and a collector (which its plugins inherit), gets no spans
// of its plugins to that collector: no orphan root traces. Nor when it
// inherited a request to export from a host of its own.
func TestUntracedHostsPluginExportsNothing(t *testing.T) {
	for _, inherited := range []bool{false, true} {
		t.Run(fmt.Sprintf("inherited request=%v", inherited), func(t *testing.T) {
			recv := otlpEnv(t, "grpc")
			if inherited {
				t.Setenv("PLUGKIT_EXPORT_TRACES", "1")
			}
			c := start(t, config(t, "traced"))
			tracedInit(t, tracenoop.NewTracerProvider(), c, serveHealth(t, c))
			if err := c.Close(); err != nil { // the plugin would have flushed its spans by its exit
				t.Fatalf("Close: %v", err)
			}
			if spans, traces := recv.received(); spans != 0 {
				t.Errorf("the collector got %d spans in %d traces from the plugin of a host that does not trace; want none", spans, traces)
			}
		})
	}
}

// TestExportErrorIsLoggedOnce (issue 40 points 9 and 10): a plugin whose
// every export fails (OTLP over HTTP, the default protocol, sent to a
// collector's gRPC port: "malformed HTTP response", or the read of an
// HTTP/2 frame the gRPC server sends first), one span a batch, puts the
// error in the host's log once, saying what to check, and not once per
// batch.
func TestExportErrorIsLoggedOnce(t *testing.T) {
	recv := otlpEnv(t, "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
	tp, _ := newTracer(t)
	var logs testutil.Buffer
	cfg := config(t, "traced")
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	cfg.Telemetry = host.Telemetry{TracerProvider: tp}
	c := start(t, cfg)
	for range 5 {
		tracedInit(t, tp, c, serveHealth(t, c)) // a brokered ID serves one connection
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	var records []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "traces export: ") { // otlptracehttp's errors

			records = append(records, line)
		}
	}
	if len(records) != 1 || !strings.Contains(records[0], "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Errorf("the host's log has %d records of the export error; want one, naming OTEL_EXPORTER_OTLP_PROTOCOL:\n%s", len(records), strings.Join(records, "\n"))
	}
	if spans, _ := recv.received(); spans != 0 {
		t.Errorf("the gRPC collector got %d spans over HTTP", spans)
	}
}
