package hostwire

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/attribute"
)

// The lifecycle events that package manager reports through package
// host, as host.EventType values: host names them in its log records and
// counts them in its metrics, manager exports them (manager.EventRestarted,
// EventHung, EventGaveUp). host's own events take the other numbers.
const (
	// EventRestarted: the manager started a new process after the last
	// one exited or hung.
	EventRestarted = 5
	// EventHung: a plugin did not answer a health check after a call
	// timed out and is killed.
	EventHung = 6
	// EventGaveUp: the manager stopped restarting a plugin.
	EventGaveUp = 7
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
