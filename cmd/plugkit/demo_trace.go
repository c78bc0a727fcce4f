package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/traceenv"
)

// demoTracing is the demo's tracing when the environment asks for it
// (OTEL_TRACES_EXPORTER=console, or otlp, as plugins read it): the
// host's spans go to that exporter (a console one writes to out), and
// the plugins, which get the same OTEL_* variables, export theirs the
// same way. A console exporter's output from a plugin arrives as the
// plugin's stdout, which the demo prints to out as it is, so host and
// plugin spans of one trace show side by side. It returns the host's telemetry, the logger to use, the root
// span's context and the function that ends it all (flushing the spans).
func demoTracing(ctx context.Context, logger *slog.Logger, out io.Writer) (host.Telemetry, *slog.Logger, context.Context, func()) {
	if os.Getenv(traceenv.EnvExporter) == "" {
		return host.Telemetry{}, logger, ctx, func() {}
	}
	exps, err := traceenv.Exporters(ctx, os.LookupEnv, out)
	if err != nil {
		logger.Error("cannot make the exporter; the demo runs without tracing", "error", err)
	}
	if len(exps) == 0 { // an error, or OTEL_TRACES_EXPORTER=none
		return host.Telemetry{}, logger, ctx, func() {}
	}
	var opts []sdktrace.TracerProviderOption
	for _, exp := range exps {
		opts = append(opts, sdktrace.WithSyncer(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	ctx, root := tp.Tracer("plugkit demo").Start(ctx, "plugkit demo", trace.WithSpanKind(trace.SpanKindInternal))
	logger = slog.New(&pluginStdout{Handler: logger.Handler(), out: out})
	return host.Telemetry{TracerProvider: tp}, logger, ctx, func() {
		root.End()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tp.Shutdown(sctx)
	}
}

// pluginStdout prints what plugins write to their standard output (a
// console exporter's spans) to out, line by line, and hands every other
// record on.
type pluginStdout struct {
	slog.Handler
	out io.Writer
}

func (h *pluginStdout) Enabled(ctx context.Context, l slog.Level) bool {
	return l == slog.LevelInfo || h.Handler.Enabled(ctx, l)
}

func (h *pluginStdout) Handle(ctx context.Context, r slog.Record) error {
	stdout := false
	var fields map[string]any
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "stream":
			stdout = a.Value.String() == "stdout"
		case "fields": // the plugin's own fields, in their group
			fields = attrMap(a.Value.Group())
		}
		return true
	})
	if stdout {
		// A console exporter's span is one JSON object a line, which the
		// host read as a record's fields: printed back as JSON.
		line := r.Message
		if line == "" {
			b, err := json.Marshal(fields)
			if err != nil {
				return err
			}
			line = string(b)
		}
		_, err := io.WriteString(h.out, line+"\n")
		return err
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// attrMap is a group's attributes as a JSON object.
func attrMap(attrs []slog.Attr) map[string]any {
	m := make(map[string]any, len(attrs))
	for _, a := range attrs {
		if a.Value.Kind() == slog.KindGroup {
			m[a.Key] = attrMap(a.Value.Group())
		} else {
			m[a.Key] = a.Value.Any()
		}
	}
	return m
}

func (h *pluginStdout) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &pluginStdout{Handler: h.Handler.WithAttrs(attrs), out: h.out}
}

func (h *pluginStdout) WithGroup(name string) slog.Handler {
	return &pluginStdout{Handler: h.Handler.WithGroup(name), out: h.out}
}
