package host

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/plugkit/plugkit/internal/tracewire"
)

// TestZeroTelemetryInstallsNothing: without a TracerProvider or a
// MeterProvider no stats handler is installed anywhere and nothing is
// passed to the plugin; an OnEvent alone changes neither.
func TestZeroTelemetryInstallsNothing(t *testing.T) {
	for _, tel := range []Telemetry{{}, {OnEvent: func(Event) {}}} {
		if tel.dialOptions("p", "/bin/p") != nil || tel.serverOptions("p", "/bin/p") != nil {
			t.Error("gRPC options installed without a TracerProvider or MeterProvider")
		}
		if env := tel.launchEnv(context.Background(), "p", []string{"OTEL_SERVICE_NAME=x"}); env != nil {
			t.Errorf("passed %v to the plugin without a TracerProvider", env)
		}
		// Asked for by a host of its own (this host is a plugin): cleared.
		if env := tel.launchEnv(context.Background(), "p", []string{tracewire.EnvExport + "=1"}); !slices.Equal(env, []string{tracewire.EnvExport + "="}) {
			t.Errorf("passed %v to the plugin without a TracerProvider; want %s cleared", env, tracewire.EnvExport)
		}
	}
	metered := Telemetry{MeterProvider: sdkmetric.NewMeterProvider()}
	if metered.dialOptions("p", "") == nil || metered.serverOptions("p", "") == nil {
		t.Error("no gRPC options with a MeterProvider")
	}
}

// TestLaunchEnvPassesOTELAndTraceContext: a tracing host passes its
// OTEL_* variables, nothing else of its own, and the start's trace
// context; it names the plugin's service after the plugin, not after
// itself, adds its own service name (its resource's) to the resource
// attributes it passes on, and asks the plugin to export.
func TestLaunchEnvPassesOTELAndTraceContext(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "the host, v2"))))
	defer tp.Shutdown(context.Background())
	tel := Telemetry{TracerProvider: tp}
	ctx, span := tel.startSpan(context.Background(), "p", "/bin/p")
	defer span.End()
	env := tel.launchEnv(ctx, "fs", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318", "SECRET=x", "HOTEL_X=y",
		"OTEL_SERVICE_NAME=from-the-environment", "OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod"})
	want := []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318",
		"OTEL_SERVICE_NAME=fs",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod,plugkit.host.service.name=the%20host%2C%20v2",
		tracewire.EnvExport + "=1",
		"TRACEPARENT=00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01",
	}
	if !slices.Equal(env, want) {
		t.Errorf("env\n%s\nwant\n%s", strings.Join(env, "\n"), strings.Join(want, "\n"))
	}
	// What the plugin's SDK makes of them.
	for _, kv := range env[1:3] {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	res, err := resource.New(context.Background(), resource.WithFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[attribute.Key]string{"service.name": "fs", tracewire.HostServiceKey: "the host, v2", "deployment.environment": "prod"} {
		if v, _ := res.Set().Value(k); v.AsString() != want {
			t.Errorf("the plugin's resource has %s=%q, want %q", k, v.AsString(), want)
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
