package host

import (
	"cmp"
	"context"
	"net/url"
	"reflect"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/plugkit/plugkit/internal/hostwire"
	"github.com/plugkit/plugkit/internal/tracewire"
)

// Telemetry says where a host reports what its plugins do, on
// OpenTelemetry: spans of every call (host to plugin, the plugin's
// brokered callbacks, plugin services), metrics per plugin, and lifecycle
// events. Its zero value reports nothing and costs nothing: no gRPC stats
// handler is installed.
//
// With a TracerProvider, W3C trace context crosses every connection the
// host makes or serves for the plugin, and a launched plugin is given the
// host's OTEL_* environment variables, the trace context of its start
// (TRACEPARENT) and the request to export (PLUGKIT_EXPORT_TRACES=1), even
// when Command.InheritEnv restricts its environment, so that a plugkit
// plugin's own spans join the host's traces and reach the same
// collector. They are a service of the plugin's own: its
// OTEL_SERVICE_NAME is the plugin's name, with the host's service name
// added to its OTEL_RESOURCE_ATTRIBUTES as plugkit.host.service.name.
// Without a TracerProvider a plugin is not asked to export, whatever
// OTEL_* variables it inherits.
type Telemetry struct {
	// TracerProvider makes the spans; nil means no tracing.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics (see the package documentation of
	// the names); nil means no metrics.
	MeterProvider metric.MeterProvider
	// Propagator carries trace context across the plugin boundary; nil
	// means W3C trace context and baggage.
	Propagator propagation.TextMapPropagator
	// OnEvent, when set, is called with every lifecycle event of the
	// plugin (see Event), on the goroutine that saw it, which may be in
	// the middle of a start or a Close, or hold the manager's lock of the
	// plugin: it must return quickly and not call the Client, a Manager
	// or a Conn (hand the event to a channel or a goroutine for more).
	// Each event is also logged to Options.Logger.
	OnEvent func(Event)
	// Attributes are added to the plugin's metrics and events (the
	// manager adds the plugin's kind and release version).
	Attributes []attribute.KeyValue
}

// EventType says what happened to a plugin.
type EventType int

// The lifecycle events.
const (
	// EventStarted: the plugin's process answered its handshake (Pid,
	// Major).
	EventStarted EventType = iota + 1
	// EventReady: the host is connected and the plugin is healthy
	// (Duration: the time to start).
	EventReady
	// EventExited: the plugin's process exited (Status, Signal, Cause;
	// Unexpected when nobody asked it to).
	EventExited
	// EventCrashed: the plugin's process died of a Go panic (Cause is
	// the *PanicError).
	EventCrashed
	// Package manager's events, which the host names, logs and counts:
	// manager.EventRestarted, EventHung and EventGaveUp.
	eventRestarted
	eventHung
	eventGaveUp
	// EventPinRefused: the binary did not have its pinned SHA-256 and
	// was not run (Cause is the *ChecksumError).
	EventPinRefused
	// Package manager's upgrade events: manager.EventUpgradeStarted,
	// EventUpgradeSwitched, EventUpgradeCompleted,
	// EventUpgradeRolledBack and EventUpgradeRefused.
	eventUpgradeStarted
	eventUpgradeSwitched
	eventUpgradeCompleted
	eventUpgradeRolledBack
	eventUpgradeRefused
	// Package manager's manager.EventRestartRefused.
	eventRestartRefused
)

var eventNames = [...]string{"", "started", "ready", "exited", "crashed", "restarted", "hung", "gave up", "refused by pin",
	"upgrade started", "upgrade switched", "upgrade completed", "upgrade rolled back", "upgrade refused", "restart refused"}

// String names the event as the log records do.
func (t EventType) String() string {
	if t > 0 && int(t) < len(eventNames) {
		return eventNames[t]
	}
	return "unknown"
}

// Event is one thing that happened to a plugin. Only the fields its Type
// names are set.
type Event struct {
	Type EventType
	Time time.Time
	// Plugin is the plugin's name (Options.Name) and Binary its
	// executable, when launched.
	Plugin, Binary string
	// Pid is the process ID, when there is one.
	Pid int
	// Major is the negotiated app protocol version.
	Major int
	// Duration is the time to start, for EventReady.
	Duration time.Duration
	// Status is the exit status ("exit status 2") and Signal the signal
	// that ended the process, if one did ("killed").
	Status, Signal string
	// Unexpected is set for an exit nobody asked for.
	Unexpected bool
	// Stderr holds the last lines of the plugin's standard error, for an
	// unexpected exit that was no panic.
	Stderr string
	// Restarts is the number of restarts in a row.
	Restarts int
	// Cause says why: the *PanicError of a crash, the exit's cause, the
	// *ChecksumError of a refused pin, the last error before giving up.
	Cause error
	// Attributes are Telemetry.Attributes, with those the reporter of
	// the event added (a manager adds the plugin's release version).
	Attributes []attribute.KeyValue
}

// traced reports whether the plugin's gRPC connections are instrumented.
func (t *Telemetry) traced() bool { return t.TracerProvider != nil || t.MeterProvider != nil }

func (t *Telemetry) propagator() propagation.TextMapPropagator {
	if t.Propagator != nil {
		return t.Propagator
	}
	return tracewire.Propagator()
}

// grpcOptions are the otelgrpc options for the plugin's connections,
// with the plugin's attributes.
func (t *Telemetry) grpcOptions(name, binary string) []otelgrpc.Option {
	attrs := []attribute.KeyValue{attribute.String("plugkit.plugin", name)}
	if binary != "" {
		attrs = append(attrs, attribute.String("plugkit.binary", binary))
	}
	opts := []otelgrpc.Option{
		otelgrpc.WithPropagators(t.propagator()),
		otelgrpc.WithFilter(tracewire.Traceable),
		otelgrpc.WithMetricAttributes(append(attrs, t.Attributes...)...),
		otelgrpc.WithMetricAttributesFn(hostwire.CallAttributes),
	}
	if t.TracerProvider != nil {
		opts = append(opts, otelgrpc.WithTracerProvider(t.TracerProvider))
	} else {
		opts = append(opts, otelgrpc.WithTracerProvider(tracenoop.NewTracerProvider()))
	}
	if t.MeterProvider != nil {
		opts = append(opts, otelgrpc.WithMeterProvider(t.MeterProvider))
	} else {
		opts = append(opts, otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()))
	}
	return opts
}

// dialOptions are the otelgrpc options of a connection to the plugin;
// none without telemetry.
func (t *Telemetry) dialOptions(name, binary string) []grpc.DialOption {
	if !t.traced() {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(addressless{otelgrpc.NewClientHandler(t.grpcOptions(name, binary)...)})}
}

// addressless keeps the address of the plugin's end from otelgrpc's
// client handler, which would make it the server.address (and
// server.port) of every call's span and rpc.client.call.duration: a
// launched plugin's socket path, or loopback port, is new for every
// process, so each start or restart would make new series. The plugin is
// named by the attributes of grpcOptions instead.
type addressless struct{ stats.Handler }

func (h addressless) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if oh, ok := s.(*stats.OutHeader); ok && oh.Client && oh.RemoteAddr != nil {
		c := *oh
		c.RemoteAddr = nil
		s = &c
	}
	h.Handler.HandleRPC(ctx, s)
}

// serverOptions are the otelgrpc options of a brokered server the host
// serves; none without telemetry.
func (t *Telemetry) serverOptions(name, binary string) []grpc.ServerOption {
	if !t.traced() {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(t.grpcOptions(name, binary)...))}
}

// launchEnv is what the host passes on about tracing to the plugin it
// launches, named name. A traced host passes its own OTEL_* variables but
// OTEL_SERVICE_NAME: the plugin's service is the plugin
// (OTEL_SERVICE_NAME=name), and the host's own service name is added to
// its OTEL_RESOURCE_ATTRIBUTES as plugkit.host.service.name; it passes the
// trace context of the start (TRACEPARENT) and asks the plugin to export
// (tracewire.EnvExport=1). A host that does not trace passes nothing,
// but clears an EnvExport it inherited.
func (t *Telemetry) launchEnv(ctx context.Context, name string, environ []string) []string {
	if t.TracerProvider == nil {
		for _, kv := range environ {
			if strings.HasPrefix(kv, tracewire.EnvExport+"=") {
				return []string{tracewire.EnvExport + "="}
			}
		}
		return nil
	}
	var env, attrs []string
	hostName := ""
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == envServiceName:
			hostName = v
		case k == envResourceAttributes:
			if v != "" {
				attrs = append(attrs, v)
			}
		case strings.HasPrefix(k, "OTEL_"):
			env = append(env, kv)
		}
	}
	hostName = cmp.Or(serviceName(trace.SpanFromContext(ctx)), hostName)
	if hostName != "" {
		attrs = append(attrs, tracewire.HostServiceKey+"="+url.PathEscape(hostName))
	}
	env = append(env, envServiceName+"="+name)
	if len(attrs) > 0 {
		env = append(env, envResourceAttributes+"="+strings.Join(attrs, ","))
	}
	env = append(env, tracewire.EnvExport+"=1")
	carrier := propagation.MapCarrier{}
	t.propagator().Inject(ctx, carrier)
	for k, v := range carrier {
		env = append(env, strings.ToUpper(k)+"="+v)
	}
	return env
}

// The resource variables of the OpenTelemetry specification.
const (
	envServiceName        = "OTEL_SERVICE_NAME"
	envResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
)

// serviceName is the service.name of the resource of span, when it has
// one (a recording span of OpenTelemetry's SDK), else "". The host links
// no SDK: it asks for the span's Resource method by name.
func serviceName(span trace.Span) string {
	m := reflect.ValueOf(span).MethodByName("Resource")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return ""
	}
	res, ok := m.Call(nil)[0].Interface().(interface{ Set() *attribute.Set })
	if !ok {
		return ""
	}
	v, _ := res.Set().Value("service.name")
	return v.AsString()
}

// startSpan starts the span of a plugin's start, when tracing; its trace
// context is what the plugin is given as TRACEPARENT.
func (t *Telemetry) startSpan(ctx context.Context, name, path string) (context.Context, trace.Span) {
	if t.TracerProvider == nil {
		return ctx, nil
	}
	return t.TracerProvider.Tracer(meterScope).Start(ctx, "plugkit.start "+name,
		trace.WithAttributes(attribute.String("plugkit.plugin", name), attribute.String("plugkit.binary", path)))
}

// endSpan ends span, if any, with err as its status.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
