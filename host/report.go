package host

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/plugkit/plugkit/internal/hostwire"
)

// meterScope names plugkit's instruments and tracer.
const meterScope = "github.com/plugkit/plugkit"

// startDurationBounds are the bucket bounds, in seconds, of the
// histogram plugkit.plugin.start.duration: from 1 ms (a plugin served in
// the host's process) to 10 s (a slow start under load; Timeouts.Start
// defaults to a minute), about three to a decade. OpenTelemetry's
// default bounds (0 to 10000) are made for milliseconds and would put
// every start in the first bucket or two.
var startDurationBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

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
	upgrades    metric.Int64Counter
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
	i.startTime, _ = m.Float64Histogram("plugkit.plugin.start.duration", metric.WithUnit("s"), metric.WithDescription("Time from launch to a healthy connection."),
		metric.WithExplicitBucketBoundaries(startDurationBounds...))
	i.exits, _ = m.Int64Counter("plugkit.plugin.exits", metric.WithDescription("Plugin process exits, by cause (stopped, exited, signaled, panic)."))
	i.restarts, _ = m.Int64Counter("plugkit.plugin.restarts", metric.WithDescription("Plugin processes restarted by the manager."))
	i.hung, _ = m.Int64Counter("plugkit.plugin.hung", metric.WithDescription("Plugins found hung by a health check and killed."))
	i.pinRefusals, _ = m.Int64Counter("plugkit.plugin.pin_refusals", metric.WithDescription("Binaries refused because their SHA-256 was not the pinned one."))
	i.gaveUp, _ = m.Int64Counter("plugkit.plugin.gave_up", metric.WithDescription("Plugins the manager stopped restarting."))
	i.upgrades, _ = m.Int64Counter("plugkit.plugin.upgrades", metric.WithDescription("Upgrades of running plugins to a new release, by outcome (completed, rolled_back, refused)."))
	return i
}

func newReporter(tel Telemetry, logger *slog.Logger, name, binary string) *reporter {
	return &reporter{tel: tel, logger: logger, name: name, binary: binary, m: newInstruments(tel.MeterProvider)}
}

// report sends e to OnEvent, the log and the metrics.
func (r *reporter) report(e Event) {
	e.Time, e.Attributes = time.Now(), withAttributes(r.tel.Attributes, e.Attributes)
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
	case e.Type == EventExited && e.Unexpected, e.Type == eventRestarted, e.Type == eventUpgradeRefused:
		level = slog.LevelWarn
	case e.Type == EventCrashed, e.Type == eventHung, e.Type == eventGaveUp, e.Type == EventPinRefused, e.Type == eventUpgradeRolledBack, e.Type == eventRestartRefused:
		level = slog.LevelError
	case e.Type >= eventUpgradeStarted && e.Type <= eventUpgradeCompleted:
		level = slog.LevelInfo
	}
	if !r.logger.Enabled(context.Background(), level) {
		return
	}
	args := []any{"event", e.Type.String()}
	if r.name == "" {
		// hostwire.Report's: the logger does not name the plugin.
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
	case EventCrashed, eventHung, eventGaveUp, EventPinRefused:
		args = append(args, "pid", e.Pid)
	case eventRestarted:
		args = append(args, "restarts", e.Restarts)
	case eventUpgradeSwitched, eventUpgradeCompleted, eventUpgradeRolledBack:
		args = append(args, "pid", e.Pid)
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
	attrs := append([]attribute.KeyValue{attribute.String("plugkit.plugin", e.Plugin), attribute.String("plugkit.binary", e.Binary)}, e.Attributes...)
	set := metric.WithAttributes(attrs...)
	ctx := context.Background()
	switch e.Type {
	case EventStarted:
		r.m.starts.Add(ctx, 1, set)
	case EventReady:
		r.m.startTime.Record(ctx, e.Duration.Seconds(), set)
	case EventExited, EventCrashed:
		r.m.exits.Add(ctx, 1, metric.WithAttributes(append(attrs, attribute.String("plugkit.exit.cause", exitCause(e)))...))
	case eventRestarted:
		r.m.restarts.Add(ctx, 1, set)
	case eventHung:
		r.m.hung.Add(ctx, 1, set)
	case eventGaveUp:
		r.m.gaveUp.Add(ctx, 1, set)
	case EventPinRefused:
		r.m.pinRefusals.Add(ctx, 1, set)
	case eventUpgradeCompleted, eventUpgradeRolledBack, eventUpgradeRefused:
		outcome := map[EventType]string{eventUpgradeCompleted: "completed", eventUpgradeRolledBack: "rolled_back", eventUpgradeRefused: "refused"}[e.Type]
		r.m.upgrades.Add(ctx, 1, metric.WithAttributes(append(attrs, attribute.String("plugkit.upgrade.outcome", outcome))...))
	}
}

// withAttributes is the attributes of an event: Telemetry.Attributes
// and those its reporter gave it (the manager's plugkit.plugin.version),
// which win over one of the same key.
func withAttributes(tel, own []attribute.KeyValue) []attribute.KeyValue {
	if len(own) == 0 {
		return tel
	}
	out := slices.DeleteFunc(slices.Clone(tel), func(a attribute.KeyValue) bool {
		return slices.ContainsFunc(own, func(o attribute.KeyValue) bool { return o.Key == a.Key })
	})
	return append(out, own...)
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

func init() {
	// Package manager reports its events (restarts, hung plugins, giving
	// up) through this, as the host reports its own; e.Attributes are
	// added to the Telemetry's Attributes (winning over one of the same
	// key).
	hostwire.Report = func(t Telemetry, logger *slog.Logger, e Event) {
		newReporter(t, cmp.Or(logger, slog.Default()), "", "").report(e)
	}
	// plugintest tells host.TLS(cfg) from the other settings with this.
	hostwire.OwnTLS = func(s Security) bool { return s.mode == modeTLS }
}
