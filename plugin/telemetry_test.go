package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestTracingFromEnvironment: the plugin's tracing is Config's provider,
// else an exporting SDK provider when OTEL_* names an exporter, else the
// trace context alone when the host traces (TRACEPARENT), else none.
func TestTracingFromEnvironment(t *testing.T) {
	own := sdktrace.NewTracerProvider()
	defer own.Shutdown(context.Background())
	for _, tc := range []struct {
		name string
		cfg  Config
		env  map[string]string
		want string // "none", "config", "sdk", "context"
	}{
		{"nothing", Config{}, nil, "none"},
		{"exporter none", Config{}, map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_SERVICE_NAME": "x"}, "none"},
		{"config", Config{TracerProvider: own}, map[string]string{"OTEL_TRACES_EXPORTER": "console"}, "config"},
		{"console", Config{}, map[string]string{"OTEL_TRACES_EXPORTER": "console"}, "sdk"},
		{"otlp endpoint", Config{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, "sdk"},
		{"traceparent only", Config{}, map[string]string{"TRACEPARENT": "00-" + "4bf92f3577b34da6a3ce929d0e0e4736" + "-00f067aa0ba902b7-01"}, "context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v) // autoexport reads the process's environment
			}
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			tr := tc.cfg.newTracing(context.Background(), lookup, slog.New(slog.DiscardHandler))
			defer tr.close()
			got := "none"
			switch {
			case tr == nil:
			case tr.tp == trace.TracerProvider(own):
				got = "config"
			case tr.flush != nil:
				got = "sdk"
			default:
				got = "context"
			}
			if got != tc.want {
				t.Errorf("tracing %s, want %s", got, tc.want)
			}
			if got == "none" && (tr.serverOptions() != nil || tr.dialOptions() != nil) {
				t.Error("options installed without tracing")
			}
		})
	}
}

// TestLogRecordCarriesTraceIDs: a record logged with a context that
// carries a span gets its trace_id and span_id; one without, neither.
func TestLogRecordCarriesTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(NewLogHandler(&buf, slog.LevelInfo)).With("module", "m")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	logger.InfoContext(ctx, "in a call")
	logger.Info("outside")
	var recs []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 2 || recs[0]["trace_id"] != tid.String() || recs[0]["span_id"] != sid.String() || recs[0]["@module"] != "m" {
		t.Errorf("record in a call: %v; want trace_id %s span_id %s", recs[0], tid, sid)
	}
	if _, ok := recs[1]["trace_id"]; ok {
		t.Errorf("record outside a call has a trace_id: %v", recs[1])
	}
}
