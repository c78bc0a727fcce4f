package bench

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/bench/internal/echo"
	"github.com/plugkit/plugkit/host"
)

// spansKept bounds the spans the host's in-memory exporter holds: it is
// emptied every spansKept calls, so that a long run does not grow.
const spansKept = 4096

// traced is the host side of the tracing contenders: the SDK sampling
// every span into an in-memory exporter.
type traced struct {
	tp  *sdktrace.TracerProvider
	exp *tracetest.InMemoryExporter
}

func newTraced() traced {
	exp := tracetest.NewInMemoryExporter()
	return traced{tp: sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSyncer(exp)), exp: exp}
}

// telemetryContenders are the rows of BenchmarkTelemetry: plugkit with
// the zero Telemetry (no TracerProvider: no stats handler), plugkit with
// Telemetry holding only an event callback (still no TracerProvider),
// and, tracing every call on both sides, plugkit against grpc-go with
// otelgrpc on both sides.
func telemetryContenders(tr traced) []contender {
	startPK := func(tel host.Telemetry, env []string) func(ctx context.Context) (grpc.ClientConnInterface, func(), error) {
		return func(ctx context.Context) (grpc.ClientConnInterface, func(), error) {
			cmd, opts := pkConfig(false)
			cmd.Env, opts.Telemetry = env, tel
			c, err := host.Start(ctx, cmd, opts)
			if err != nil {
				return nil, nil, err
			}
			return c.Conn(), func() { c.Close() }, nil
		}
	}
	traceEnv := []string{echo.EnvTrace + "=1"}
	return []contender{
		{"plugkit", startPK(host.Telemetry{}, nil)},
		{"plugkit-events-only", startPK(host.Telemetry{OnEvent: func(host.Event) {}}, nil)},
		{"plugkit-traced", startPK(host.Telemetry{TracerProvider: tr.tp}, traceEnv)},
		{"raw-otelgrpc", func(ctx context.Context) (grpc.ClientConnInterface, func(), error) {
			return startRawWith(ctx, false, traceEnv, grpc.WithStatsHandler(otelgrpc.NewClientHandler(
				otelgrpc.WithTracerProvider(tr.tp), otelgrpc.WithPropagators(propagation.TraceContext{}), otelgrpc.WithMeterProvider(noop.NewMeterProvider()))))
		}},
	}
}

// BenchmarkTelemetry measures one unary round trip of 16 B (as
// BenchmarkUnary) for each of telemetryContenders, side by side.
func BenchmarkTelemetry(b *testing.B) {
	tr := newTraced()
	b.Cleanup(func() { tr.tp.Shutdown(context.Background()) })
	ctx := ctxFor(b, 30*time.Second)
	payload := make([]byte, 16)
	for _, c := range telemetryContenders(tr) {
		cc, stop, err := c.start(ctx)
		if err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		b.Cleanup(stop)
		if _, err := echo.Echo(ctx, cc, payload); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		b.Run("16B/"+c.name, func(b *testing.B) {
			ctx := ctxFor(b, 10*time.Minute)
			b.SetBytes(2 * 16)
			n := 0
			for b.Loop() {
				if _, err := echo.Echo(ctx, cc, payload); err != nil {
					b.Fatal(err)
				}
				if n++; n%spansKept == 0 {
					tr.exp.Reset()
				}
			}
		})
	}
}
