package plugin

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/internal/tracehook"
	"github.com/plugkit/plugkit/internal/tracewire"
)

// flushTimeout bounds the export of a plugin's last spans when it stops.
const flushTimeout = time.Second

// tracing is a plugin's tracing: the TracerProvider its spans go to.
type tracing struct {
	tp    trace.TracerProvider
	flush func(context.Context) error // the provider Run made; nil otherwise
}

// newTracing is the plugin's tracing: Config.TracerProvider; else, when
// the host asks for export (tracewire.EnvExport), or the plugin is a
// service (EnvListen), the environment
// configures a span exporter (see exporterConfigured) and the plugin
// links the exporters (package plugin/traceexport), an SDK provider
// exporting there; else, when the host traces (it sets
// TRACEPARENT), the trace context only, so that log records carry the
// call's IDs; else none, at no cost. An exporter the environment names
// but the plugin cannot make is logged, and the plugin serves without
// exporting spans.
func (cfg Config) newTracing(ctx context.Context, lookup func(string) (string, bool), logger *slog.Logger) *tracing {
	if cfg.TracerProvider != nil {
		return &tracing{tp: cfg.TracerProvider}
	}
	if exporterConfigured(lookup) {
		asked, _ := lookup(tracewire.EnvExport)
		service, _ := lookup(EnvListen)
		if !tracewire.ExportAsked(asked) && service == "" {
			// Inherited from the host's environment: a host that traces
			// asks for export itself. (A plugin service has no host that
			// launched it: its environment is its operator's.)
			logger.Debug("the OTEL_* environment names a span exporter, but the host does not trace: the plugin exports nothing")
		} else if t := exportingTracing(ctx, lookup, logger); t != nil {
			return t
		}
	}
	if v, _ := lookup("TRACEPARENT"); v != "" {
		return &tracing{tp: tracenoop.NewTracerProvider()}
	}
	return nil
}

// exportingTracing is a provider exporting where the environment says,
// or nil, saying why in the log, when it cannot be made.
func exportingTracing(ctx context.Context, lookup func(string) (string, bool), logger *slog.Logger) *tracing {
	if tracehook.Provider == nil {
		if v, _ := lookup(tracehook.EnvExporter); !strings.EqualFold(strings.TrimSpace(v), "none") {
			logger.Warn("the plugin's spans are not exported: the OTEL_* variables the host passes on ask for it, but the plugin is built without span exporters; " +
				"import _ \"github.com/plugkit/plugkit/plugin/traceexport\" in its main package, or build it with plugin.Config.TracerProvider")
		}
		return nil
	}
	tp, flush, err := tracehook.Provider(ctx, lookup, func(err error) {
		logger.Warn("the plugin's spans are not reaching the collector (this is said once; later failures are not logged): check OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_PROTOCOL "+
			"(grpc for a collector's port 4317, http/protobuf, the default, for 4318)", "error", err)
	})
	if err != nil {
		logger.Warn("the plugin's spans are not exported: correct the OTEL_* variables the host passes on, or build the plugin with plugin.Config.TracerProvider", "error", err)
		return nil
	}
	if tp == nil {
		return nil
	}
	return &tracing{tp: tp, flush: flush}
}

// exporterConfigured reports whether the environment asks for spans to
// be exported: OTEL_TRACES_EXPORTER is set, or an OTLP endpoint is (the
// exporter then defaults to otlp), and OTEL_SDK_DISABLED is not true.
// With none of them a plugin makes no exporter, although otlp is the
// specification's default: a plugin whose host does not trace pays
// nothing.
func exporterConfigured(lookup func(string) (string, bool)) bool {
	if v, _ := lookup("OTEL_SDK_DISABLED"); strings.EqualFold(strings.TrimSpace(v), "true") {
		return false
	}
	for _, k := range []string{tracehook.EnvExporter, "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		if v, _ := lookup(k); strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

func (t *tracing) options() []otelgrpc.Option {
	return []otelgrpc.Option{
		otelgrpc.WithTracerProvider(t.tp),
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelgrpc.WithPropagators(tracewire.Propagator()),
		otelgrpc.WithFilter(tracewire.Traceable),
	}
}

// serverOptions instrument a server the plugin serves; none without
// tracing.
func (t *tracing) serverOptions() []grpc.ServerOption {
	if t == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(t.options()...))}
}

// dialOptions instrument a connection the plugin makes (its brokered
// calls to the host); none without tracing.
func (t *tracing) dialOptions() []grpc.DialOption {
	if t == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(t.options()...))}
}

// close exports the last spans of a provider Run made.
func (t *tracing) close() {
	if t == nil || t.flush == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	t.flush(ctx)
}

// traceHandler adds the trace and span IDs of the record's context, when
// it carries a span (a call's, when the host traces), as trace_id and
// span_id.
type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(attrs)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}
