package host

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// meterScope names plugkit's instruments and tracer.
const meterScope = "github.com/plugkit/plugkit"

// reporter reports the lifecycle events of one plugin: to
// Telemetry.OnEvent, as log records and as metrics.
type reporter struct {
	tel    Telemetry
	logger *slog.Logger
	name   string
	binary string
	m      *instruments // nil without a MeterProvider
}

// instruments are the metrics of plugin lifecycles.
type instruments struct {
	starts      metric.Int64Counter
	startTime   metric.Float64Histogram
	exits       metric.Int64Counter
	restarts    metric.Int64Counter
	hung        metric.Int64Counter
	pinRefusals metric.Int64Counter
	gaveUp      metric.Int64Counter
}

func newInstruments(mp metric.MeterProvider) *instruments {
	if mp == nil {
		return nil
	}
	m := mp.Meter(meterScope)
	i := &instruments{}
	// Errors from the SDK only say an instrument is misdeclared; the
	// instrument is then a no-op, which the SDK reports itself.
	i.starts, _ = m.Int64Counter("plugkit.plugin.starts", metric.WithDescription("Plugin processes started (handshake answered)."))
	i.startTime, _ = m.Float64Histogram("plugkit.plugin.start.duration", metric.WithUnit("s"), metric.WithDescription("Time from launch to a healthy connection."))
	i.exits, _ = m.Int64Counter("plugkit.plugin.exits", metric.WithDescription("Plugin process exits, by cause (stopped, exited, signaled, panic)."))
	i.restarts, _ = m.Int64Counter("plugkit.plugin.restarts", metric.WithDescription("Plugin processes restarted by the manager."))
	i.hung, _ = m.Int64Counter("plugkit.plugin.hung", metric.WithDescription("Plugins found hung by a health check and killed."))
	i.pinRefusals, _ = m.Int64Counter("plugkit.plugin.pin_refusals", metric.WithDescription("Binaries refused because their SHA-256 was not the pinned one."))
	i.gaveUp, _ = m.Int64Counter("plugkit.plugin.gave_up", metric.WithDescription("Plugins the manager stopped restarting."))
	return i
}

func newReporter(tel Telemetry, logger *slog.Logger, name, binary string) *reporter {
	return &reporter{tel: tel, logger: logger, name: name, binary: binary, m: newInstruments(tel.MeterProvider)}
}

// report sends e to OnEvent, the log and the metrics.
func (r *reporter) report(e Event) {
	e.Time, e.Attributes = time.Now(), r.tel.Attributes
	e.Plugin, e.Binary = cmp.Or(e.Plugin, r.name), cmp.Or(e.Binary, r.binary)
	r.log(e)
	r.count(e)
	if r.tel.OnEvent != nil {
		r.tel.OnEvent(e)
	}
}

func (r *reporter) log(e Event) {
	level, msg := slog.LevelDebug, "plugin "+e.Type.String()
	switch {
	case e.Type == EventExited && e.Unexpected, e.Type == EventRestarted:
		level = slog.LevelWarn
	case e.Type == EventCrashed, e.Type == EventHung, e.Type == EventGaveUp, e.Type == EventPinRefused:
		level = slog.LevelError
	}
	if !r.logger.Enabled(context.Background(), level) {
		return
	}
	args := []any{"event", e.Type.String()}
	if r.name == "" {
		// Telemetry.Report's: the logger does not name the plugin.
		args = append(args, "plugin", e.Plugin, "binary", e.Binary)
	}
	switch e.Type {
	case EventStarted:
		args = append(args, "pid", e.Pid, "major", e.Major)
	case EventReady:
		args = append(args, "pid", e.Pid, "major", e.Major, "after", e.Duration.Round(time.Millisecond))
	case EventExited:
		args = append(args, "pid", e.Pid, "status", e.Status)
		if e.Unexpected {
			msg = "plugin exited while its host was using it"
			args = append(args, "stderr", e.Stderr)
		}
	case EventCrashed, EventHung, EventGaveUp, EventPinRefused:
		args = append(args, "pid", e.Pid)
	case EventRestarted:
		args = append(args, "restarts", e.Restarts)
	}
	if e.Signal != "" {
		args = append(args, "signal", e.Signal)
	}
	if e.Cause != nil {
		args = append(args, "cause", e.Cause.Error())
		if p, ok := e.Cause.(*PanicError); ok {
			args = append(args, "panic", p.Message, "stack", p.Stack)
		}
	}
	for _, a := range e.Attributes {
		args = append(args, string(a.Key), a.Value.String())
	}
	r.logger.Log(context.Background(), level, msg, args...)
}

func (r *reporter) count(e Event) {
	if r.m == nil {
		return
	}
	attrs := append([]attribute.KeyValue{attribute.String("plugkit.plugin", e.Plugin), attribute.String("plugkit.binary", e.Binary)}, r.tel.Attributes...)
	set := metric.WithAttributes(attrs...)
	ctx := context.Background()
	switch e.Type {
	case EventStarted:
		r.m.starts.Add(ctx, 1, set)
	case EventReady:
		r.m.startTime.Record(ctx, e.Duration.Seconds(), set)
	case EventExited, EventCrashed:
		r.m.exits.Add(ctx, 1, metric.WithAttributes(append(attrs, attribute.String("plugkit.exit.cause", exitCause(e)))...))
	case EventRestarted:
		r.m.restarts.Add(ctx, 1, set)
	case EventHung:
		r.m.hung.Add(ctx, 1, set)
	case EventGaveUp:
		r.m.gaveUp.Add(ctx, 1, set)
	case EventPinRefused:
		r.m.pinRefusals.Add(ctx, 1, set)
	}
}

// exitCause is the plugkit.exit.cause of an exit: stopped (asked to),
// panic, signaled or exited (on its own).
func exitCause(e Event) string {
	switch {
	case e.Type == EventCrashed:
		return "panic"
	case !e.Unexpected:
		return "stopped"
	case e.Signal != "":
		return "signaled"
	}
	return "exited"
}

// Report reports e as the host reports its own events: to OnEvent, as a
// record on logger (nil: slog.Default()) and as metrics on the
// MeterProvider. It is for code that runs plugins on top of this package
// (package manager reports restarts, hung plugins, refusals and giving up
// with it); e.Plugin and e.Binary name the plugin.
func (t Telemetry) Report(logger *slog.Logger, e Event) {
	newReporter(t, cmp.Or(logger, slog.Default()), "", "").report(e)
}
