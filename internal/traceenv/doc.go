// Package traceenv makes the span exporters that the standard
// OpenTelemetry environment names, for traces only.
//
// It reads OTEL_TRACES_EXPORTER and the OTLP protocol variables and
// builds each exporter with OpenTelemetry's own packages (otlptracegrpc,
// otlptracehttp, stdouttrace), which read their own endpoint, headers,
// timeout and TLS variables. Unlike
// go.opentelemetry.io/contrib/exporters/autoexport, it links no metric,
// log or Prometheus exporter, which a plugin binary cannot use: the
// plugin side of plugkit exports traces only.
package traceenv
