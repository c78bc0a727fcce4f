package tracehook

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// EnvExporter names the trace exporters: a comma-separated list of otlp
// (the default), console and none.
const EnvExporter = "OTEL_TRACES_EXPORTER"

// Provider makes a TracerProvider exporting to the span exporters the
// environment names (lookup reads it), and the function that flushes and
// stops it; a nil provider, and no error, when the environment names none
// (OTEL_TRACES_EXPORTER=none). The first error of an export is given to
// report, once: the others (every later batch, usually the same cause)
// are dropped. It is nil until package plugin/traceexport is linked,
// which sets it: the SDK and the exporters are linked with it.
var Provider func(ctx context.Context, lookup func(string) (string, bool), report func(error)) (trace.TracerProvider, func(context.Context) error, error)
