package traceexport

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugkit/plugkit/internal/traceenv"
	"github.com/plugkit/plugkit/internal/tracehook"
)

func init() { tracehook.Provider = provider }

// provider is an SDK provider sending spans to the exporters the
// environment names (in batches, but to the console as each ends), with the resource it describes (OTEL_SERVICE_NAME,
// which a plugkit host sets to the plugin's name, and
// OTEL_RESOURCE_ATTRIBUTES); nil for none. The first export error goes
// to report, once for all the exporters.
func provider(ctx context.Context, lookup func(string) (string, bool), report func(error)) (trace.TracerProvider, func(context.Context) error, error) {
	exps, err := traceenv.Exporters(ctx, lookup, nil) // console: the process's stdout, which the host logs
	if err != nil || len(exps) == 0 {
		return nil, nil, err
	}
	once := &sync.Once{}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(resource.Default())}
	for _, exp := range exps {
		r := &reporting{SpanExporter: exp, once: once, report: report}
		if _, console := exp.(*stdouttrace.Exporter); console {
			// A local write: each span is written as it ends, so that a
			// plugin killed (or crashed) loses none of those it wrote.
			opts = append(opts, sdktrace.WithSyncer(r))
			continue
		}
		opts = append(opts, sdktrace.WithBatcher(r))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return tp, tp.Shutdown, nil
}

// reporting gives the first error of its exports to report, once, and
// none to the SDK, which would hand each failed batch to OpenTelemetry's
// global error handler: a line on the plugin's standard error, and so a
// record of the host's log, per batch for as long as the collector is
// unreachable.
type reporting struct {
	sdktrace.SpanExporter
	once   *sync.Once
	report func(error)
}

func (r *reporting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := r.SpanExporter.ExportSpans(ctx, spans); err != nil {
		r.once.Do(func() { r.report(err) })
	}
	return nil
}
