package hostwire

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/attribute"
)

// Report is func(host.Telemetry, *slog.Logger, host.Event): it reports
// an event as host reports its own (to Telemetry.OnEvent, as a record on
// the logger, nil meaning slog.Default(), and as metrics), for package
// manager, whose events e.Plugin and e.Binary name the plugin of. Package
// host sets it when it is initialised, before any package that imports
// host runs; it is typed any because this package cannot import host.
var Report any

// callAttributesKey is the context key of WithCallAttributes.
type callAttributesKey struct{}

// WithCallAttributes returns ctx with attrs added to the metrics of the
// calls made with it (otelgrpc's rpc.client.call.duration) on a host
// Client whose Telemetry has a MeterProvider: package manager adds the
// kind and the implementation's name of the Conn a call goes through.
func WithCallAttributes(ctx context.Context, attrs ...attribute.KeyValue) context.Context {
	if prev, ok := ctx.Value(callAttributesKey{}).([]attribute.KeyValue); ok {
		attrs = append(slices.Clip(prev), attrs...)
	}
	return context.WithValue(ctx, callAttributesKey{}, attrs)
}

// CallAttributes returns the attributes WithCallAttributes added to ctx,
// for host's metrics of a call.
func CallAttributes(ctx context.Context) []attribute.KeyValue {
	attrs, _ := ctx.Value(callAttributesKey{}).([]attribute.KeyValue)
	return attrs
}
