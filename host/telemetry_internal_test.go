package host

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestZeroTelemetryInstallsNothing: without a TracerProvider or a
// MeterProvider no stats handler is installed anywhere and nothing is
// passed to the plugin; an OnEvent alone changes neither.
func TestZeroTelemetryInstallsNothing(t *testing.T) {
	for _, tel := range []Telemetry{{}, {OnEvent: func(Event) {}}} {
		if tel.dialOptions("p", "/bin/p") != nil || tel.serverOptions("p", "/bin/p") != nil {
			t.Error("gRPC options installed without a TracerProvider or MeterProvider")
		}
		if env := tel.launchEnv(context.Background(), []string{"OTEL_SERVICE_NAME=x"}); env != nil {
			t.Errorf("passed %v to the plugin without a TracerProvider", env)
		}
	}
	metered := Telemetry{MeterProvider: sdkmetric.NewMeterProvider()}
	if metered.dialOptions("p", "") == nil || metered.serverOptions("p", "") == nil {
		t.Error("no gRPC options with a MeterProvider")
	}
}

// TestLaunchEnvPassesOTELAndTraceContext: a tracing host passes its
// OTEL_* variables, nothing else of its own, and the start's trace
// context.
func TestLaunchEnvPassesOTELAndTraceContext(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	tel := Telemetry{TracerProvider: tp}
	ctx, span := tel.startSpan(context.Background(), "p", "/bin/p")
	defer span.End()
	env := tel.launchEnv(ctx, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318", "SECRET=x", "HOTEL_X=y"})
	want := "TRACEPARENT=00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if !slices.Contains(env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318") || !slices.Contains(env, want) || len(env) != 2 {
		t.Errorf("env %v; want the OTEL_ variable and %s only", env, want)
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "SECRET") || strings.HasPrefix(kv, "HOTEL") {
			t.Errorf("passed %s", kv)
		}
	}
}

// TestPanicTextIsBounded: the stderr sink keeps a panic's stack lines cut
// as the tail's are, so a plugin cannot make the host hold megabytes of
// "stack"; the message and the stack are still read.
func TestPanicTextIsBounded(t *testing.T) {
	s := newLogSink(slog.New(slog.DiscardHandler), "stderr")
	long := strings.Repeat("x", maxLogLine-1)
	s.Write([]byte("panic: boom\n\ngoroutine 7 [running]:\n"))
	for range 10 {
		s.Write([]byte(long + "\n"))
	}
	pe := s.panicError("p")
	if pe == nil || pe.Message != "boom" || !strings.HasPrefix(pe.Stack, "goroutine 7 [running]:") {
		t.Fatalf("panicError = %+v; want message boom and the goroutine's stack", pe)
	}
	for _, line := range strings.Split(pe.Stack, "\n") {
		if len(line) > maxTailLine+len("... (cut)") {
			t.Fatalf("a stack line of %d bytes kept; want at most %d", len(line), maxTailLine)
		}
	}
}
