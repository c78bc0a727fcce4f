package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugkit/plugkit/internal/tracehook"
	"github.com/plugkit/plugkit/internal/tracewire"
	_ "github.com/plugkit/plugkit/plugin/traceexport" // the exporters of the OTEL_* environment
)

// TestTracingFromEnvironment: the plugin's tracing is Config's provider,
// else an exporting SDK provider when OTEL_* names an exporter, else the
// trace context alone when the host traces (TRACEPARENT), else none. An
// exporter or protocol the plugin cannot make is a warning saying what
// to set, and no exporter.
func TestTracingFromEnvironment(t *testing.T) {
	own := sdktrace.NewTracerProvider()
	defer own.Shutdown(context.Background())
	const endpoint, traceparent = "http://127.0.0.1:1", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name string
		cfg  Config
		env  map[string]string
		want string // "none", "config", "sdk", "context"
		warn string // in the log, when not empty
	}{
		{"nothing", Config{}, nil, "none", ""},
		{"exporter none", Config{}, map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_SERVICE_NAME": "x"}, "none", ""},
		{"exporter NONE", Config{}, map[string]string{"OTEL_TRACES_EXPORTER": "NONE"}, "none", ""},
		{"config", Config{TracerProvider: own}, map[string]string{"OTEL_TRACES_EXPORTER": "console"}, "config", ""},
		{"console", Config{}, map[string]string{"OTEL_TRACES_EXPORTER": "console"}, "sdk", ""},
		{"console and otlp", Config{}, map[string]string{"OTEL_TRACES_EXPORTER": "console,otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, "sdk", ""},
		{"otlp endpoint", Config{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, "sdk", ""},
		{"otlp grpc", Config{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "sdk", ""},
		{"sdk disabled", Config{}, map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}, "none", ""},
		{"traceparent only", Config{}, map[string]string{"TRACEPARENT": traceparent}, "context", ""},
		{"unknown exporter", Config{}, map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "none", `names the trace exporter \"zipkin\", which plugkit does not build: use otlp, console or none`},
		{"unknown exporter, host traces", Config{}, map[string]string{"OTEL_TRACES_EXPORTER": "otlp,zipkin", "TRACEPARENT": traceparent}, "context", `\"zipkin\"`},
		{"unknown protocol", Config{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, "none", `use grpc or http/protobuf`},
		// Inherited, not asked for by a host that traces (issue 40 point 8).
		{"not asked", Config{}, map[string]string{"OTEL_TRACES_EXPORTER": "console", tracewire.EnvExport: ""}, "none", ""},
		{"not asked, otlp", Config{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, tracewire.EnvExport: "0"}, "none", ""},
		{"not asked, traceparent", Config{}, map[string]string{"OTEL_TRACES_EXPORTER": "otlp,zipkin", "TRACEPARENT": traceparent, tracewire.EnvExport: ""}, "context", ""},
		// A service's environment is its operator's: no host asks.
		{"service", Config{}, map[string]string{"OTEL_TRACES_EXPORTER": "console", EnvListen: "127.0.0.1:0", tracewire.EnvExport: ""}, "sdk", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, set := tc.env[tracewire.EnvExport]; !set && tc.env != nil {
				tc.env[tracewire.EnvExport] = "1" // as a tracing host asks
			}
			for k, v := range tc.env {
				t.Setenv(k, v) // the exporters read the process's environment
			}
			var logs bytes.Buffer
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			tr := tc.cfg.newTracing(context.Background(), lookup, slog.New(slog.NewJSONHandler(&logs, nil)))
			defer tr.close()
			if got := tracingKind(tr, own); got != tc.want {
				t.Errorf("tracing %s, want %s", got, tc.want)
			}
			if tr == nil && (tr.serverOptions() != nil || tr.dialOptions() != nil) {
				t.Error("options installed without tracing")
			}
			switch {
			case tc.warn == "" && logs.Len() > 0:
				t.Errorf("logged %s", logs.String())
			case tc.warn != "" && !(strings.Contains(logs.String(), tc.warn) && strings.Contains(logs.String(), "plugin.Config.TracerProvider")):
				t.Errorf("log %q; want a warning containing %q and naming plugin.Config.TracerProvider", logs.String(), tc.warn)
			}
		})
	}
}

// TestTracingWithoutExporters: a plugin that does not import
// plugin/traceexport makes no exporter (it links none) however the
// environment asks, warns that it was built without them and says what to
// import, and still passes the host's trace context on; with none asked,
// or OTEL_TRACES_EXPORTER=none, it says nothing.
func TestTracingWithoutExporters(t *testing.T) {
	linked := tracehook.Provider
	tracehook.Provider = nil
	defer func() { tracehook.Provider = linked }()
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		env   map[string]string
		want  string // as tracingKind says
		warns bool
	}{
		{map[string]string{"OTEL_TRACES_EXPORTER": "console"}, "none", true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "TRACEPARENT": traceparent}, "context", true},
		{map[string]string{"OTEL_TRACES_EXPORTER": " None "}, "none", false},
		{map[string]string{"TRACEPARENT": traceparent}, "context", false},
	} {
		tc.env[tracewire.EnvExport] = "1" // as a tracing host asks
		var logs bytes.Buffer
		lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		tr := Config{}.newTracing(context.Background(), lookup, slog.New(slog.NewJSONHandler(&logs, nil)))
		if got := tracingKind(tr, nil); got != tc.want {
			t.Errorf("%v: tracing %s, want %s", tc.env, got, tc.want)
		}
		if warned := strings.Contains(logs.String(), `import _ \"github.com/plugkit/plugkit/plugin/traceexport\"`); warned != tc.warns || !tc.warns && logs.Len() > 0 {
			t.Errorf("%v: log %q; want a warning naming plugin/traceexport: %v", tc.env, logs.String(), tc.warns)
		}
	}
}

// tracingKind says which tracing tr is: "none", "config" (own), "sdk" (a
// provider newTracing made) or "context" (the trace context only).
func tracingKind(tr *tracing, own trace.TracerProvider) string {
	switch {
	case tr == nil:
		return "none"
	case tr.tp == own:
		return "config"
	case tr.flush != nil:
		return "sdk"
	}
	return "context"
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
