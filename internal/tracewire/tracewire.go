package tracewire

import (
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc/stats"
)

// Propagator is the propagator host and plugin agree on: W3C trace
// context and baggage.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// Traceable is the otelgrpc filter of host and plugin: it leaves out the
// go-plugin plumbing streams that live as long as the connection (the
// broker's, stdio) and the controller.
func Traceable(info *stats.RPCTagInfo) bool {
	return !strings.HasPrefix(info.FullMethodName, "/plugin.GRPC")
}

// EnvExport is how a tracing plugkit host asks the plugins it launches
// to export their spans: it sets EnvExport=1 beside the OTEL_* variables
// it passes on (and an empty EnvExport over one it inherited when it does
// not trace). A plugin exports from the OTEL_* environment only when it
// is set: OTEL_* variables it merely inherited from the host's
// environment would otherwise make it export single-span root traces
// from a host that traces nothing.
const EnvExport = "PLUGKIT_EXPORT_TRACES"

// HostServiceKey is the resource attribute of a plugin's spans that
// names its host's service (service.name being the plugin's own).
const HostServiceKey = "plugkit.host.service.name"

// ExportAsked reports whether the value of EnvExport asks for export.
func ExportAsked(v string) bool { return strings.TrimSpace(v) == "1" }
