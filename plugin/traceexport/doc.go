// Package traceexport, imported for its effect alone, lets plugin.Serve,
// plugin.Run and catalog.Serve export the plugin's spans where the
// standard OTEL_* environment says (the one a tracing plugkit host passes
// on): OTLP over gRPC or HTTP (in batches, and whenever the plugin is
// idle, so that a plugin killed between calls loses none of their spans),
// or the console (each span as it ends). Import it in the plugin's main
// package:
//
//	import _ "github.com/plugkit/plugkit/plugin/traceexport"
//
// Without it a plugin links no span exporter: the trace SDK and its
// exporters (~1.5 MB) stay out of the binary and out of the memory of
// every plugin process. Such a plugin still passes the host's trace
// context on (TRACEPARENT), so its log records carry the call's trace and
// span IDs, and a plugin that sets plugin.Config.TracerProvider exports
// through that provider either way.
// See docs/observability.md.
package traceexport
