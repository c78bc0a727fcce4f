package host_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
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
	hostCall := spanOf(t, exp.GetSpans(), root.TraceID(), "objectstore.v1.ObjectStore/Init", trace.SpanKindClient)
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
