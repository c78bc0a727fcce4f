package traceenv

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/plugkit/plugkit/internal/tracehook"
)

// The environment variables read here, as the OpenTelemetry
// specification names them.
const (
	// EnvExporter names the trace exporters: a comma-separated list of
	// otlp (the default), console and none.
	EnvExporter = tracehook.EnvExporter
	// EnvTracesProtocol is the OTLP protocol for traces: grpc or
	// http/protobuf. It takes precedence over EnvProtocol.
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	// EnvProtocol is the OTLP protocol for every signal.
	EnvProtocol = "OTEL_EXPORTER_OTLP_PROTOCOL"
)

// defaultProtocol is the specification's default OTLP protocol.
const defaultProtocol = "http/protobuf"

// The exporter names this package makes.
const (
	exporterOTLP    = "otlp"
	exporterConsole = "console"
	exporterNone    = "none"
)

// Names returns the exporters OTEL_TRACES_EXPORTER names, lower-cased,
// each once, without none: empty for none alone, otlp when the variable
// is unset or empty (the specification's default). It fails on a name
// it does not know, saying which names it knows.
func Names(lookup func(string) (string, bool)) ([]string, error) {
	v, _ := lookup(EnvExporter)
	if strings.TrimSpace(v) == "" {
		return []string{exporterOTLP}, nil
	}
	var names []string
	for _, n := range strings.Split(v, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch n {
		case "", exporterNone:
		case exporterOTLP, exporterConsole:
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		default:
			return nil, fmt.Errorf("%s=%q names the trace exporter %q, which plugkit does not build: use otlp, console or none, or a comma-separated list of them", EnvExporter, v, n)
		}
	}
	return names, nil
}

// Protocol returns the OTLP protocol for traces:
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf. It fails on a protocol OpenTelemetry's Go exporters
// do not speak (http/json among them).
func Protocol(lookup func(string) (string, bool)) (string, error) {
	for _, k := range []string{EnvTracesProtocol, EnvProtocol} {
		v, _ := lookup(k)
		p := strings.ToLower(strings.TrimSpace(v))
		switch p {
		case "":
			continue
		case "grpc", "http/protobuf":
			return p, nil
		default:
			return "", fmt.Errorf("%s=%q is not an OTLP protocol the trace exporter speaks: use grpc or http/protobuf", k, v)
		}
	}
	return defaultProtocol, nil
}

// Exporters makes the span exporters the environment names (see Names
// and Protocol; lookup reads those variables, the exporters themselves
// read the process's environment for the rest). The console exporter
// writes to console, nil meaning the standard output. It returns none,
// and no error, for OTEL_TRACES_EXPORTER=none. On an error it makes none.
func Exporters(ctx context.Context, lookup func(string) (string, bool), console io.Writer) ([]sdktrace.SpanExporter, error) {
	names, err := Names(lookup)
	if err != nil {
		return nil, err
	}
	protocol := defaultProtocol
	if slices.Contains(names, exporterOTLP) {
		if protocol, err = Protocol(lookup); err != nil {
			return nil, err
		}
	}
	var exps []sdktrace.SpanExporter
	for _, n := range names {
		exp, err := newExporter(ctx, n, protocol, console)
		if err != nil {
			for _, e := range exps {
				e.Shutdown(ctx)
			}
			return nil, fmt.Errorf("%s: making the %s trace exporter: %w", EnvExporter, n, err)
		}
		exps = append(exps, exp)
	}
	return exps, nil
}

// newExporter makes the exporter of one known name.
func newExporter(ctx context.Context, name, protocol string, console io.Writer) (sdktrace.SpanExporter, error) {
	if name == exporterConsole && console != nil {
		return stdouttrace.New(stdouttrace.WithWriter(console))
	}
	if name == exporterConsole {
		return stdouttrace.New()
	}
	if protocol == "grpc" {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}
