package echo

import (
	"os"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// EnvTrace, set to 1 in a benchmark server's environment, makes it trace
// every call it serves (TracerProvider).
const EnvTrace = "BENCH_TRACE"

// TracerProvider is the servers' TracerProvider under EnvTrace: the SDK
// sampling every span, each ended span handed to an exporter that drops
// it (a server runs the whole benchmark; storing its spans would grow
// without bound). Nil without EnvTrace.
func TracerProvider() trace.TracerProvider {
	if os.Getenv(EnvTrace) != "1" {
		return nil
	}
	return sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSyncer(tracetest.NewNoopExporter()))
}
