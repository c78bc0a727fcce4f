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
