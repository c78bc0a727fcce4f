package traceexport

import (
	"context"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugkit/plugkit/internal/traceenv"
	"github.com/plugkit/plugkit/internal/tracehook"
)

func init() { tracehook.Provider = provider }

// provider is an SDK provider batching spans to the exporters the
// environment names, with the resource it describes; nil for none.
func provider(ctx context.Context, lookup func(string) (string, bool)) (trace.TracerProvider, func(context.Context) error, error) {
	exps, err := traceenv.Exporters(ctx, lookup, nil) // console: the process's stdout, which the host logs
	if err != nil || len(exps) == 0 {
		return nil, nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(resource.Default())}
	for _, exp := range exps {
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return tp, tp.Shutdown, nil
}
