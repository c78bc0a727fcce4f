// Package tracehook lets package plugin make span exporters from the
// OTEL_* environment without linking them: the trace SDK and its exporters
// (OTLP over gRPC and HTTP, console) and everything they import weigh ~1.5 MB of a
// plugin binary, resident in every plugin process, so only plugins that
// import plugin/traceexport carry them; that import sets Provider.
package tracehook
