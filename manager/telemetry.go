package manager

import (
	"context"
	"log/slog"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/hostwire"
)

// tracerName names the manager's spans' tracer.
const tracerName = "github.com/plugkit/plugkit/manager"

// span starts a span of the manager's own operation (Discover,
// Dispense, a restart) when Config.Telemetry traces, and returns the
// function that ends it with the operation's error.
func (m *Manager) span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(error)) {
	return span(ctx, m.cfg.Telemetry, name, attrs...)
}

// span starts a span of the manager's or a Finder's operation when tel
// traces.
func span(ctx context.Context, tel host.Telemetry, name string, attrs ...attribute.KeyValue) (context.Context, func(error)) {
	tp := tel.TracerProvider
	if tp == nil {
		return ctx, func(error) {}
	}
	ctx, s := tp.Tracer(tracerName).Start(ctx, name, trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			s.RecordError(err)
			s.SetStatus(codes.Error, err.Error())
		}
		s.End()
	}
}

// report reports one of the manager's lifecycle events of a plugin
// (restarted, hung, gave up) through Config.Telemetry, and as a log
// record.
func (m *Manager) report(e host.Event) {
	reportEvent(m.cfg.Telemetry, m.cfg.logger(), e)
}

// reportEvent reports e through tel and logger as the host reports its
// own events (internal/hostwire.Report, which package host sets).
func reportEvent(tel host.Telemetry, logger *slog.Logger, e host.Event) {
	hostwire.Report.(func(host.Telemetry, *slog.Logger, host.Event))(tel, logger, e)
}

// telemetryOf is Finder.Host.Telemetry for a process (or a connection
// to a service) of a plugin whose release version is version, which its
// metrics and events carry (none when the plugin gives no version).
func (f *Finder) telemetryOf(version string) host.Telemetry {
	tel := f.Host.Telemetry
	if version != "" {
		tel.Attributes = append(slices.Clip(tel.Attributes), versionAttribute(version))
	}
	return tel
}

// describeTelemetry is Finder.Host.Telemetry for a process (or a
// connection) started to describe a plugin, whose version is not known
// yet, and the function to call with the version its Describe answer
// gives, if it is to be kept. Such a short-lived process makes no
// metrics: its series would lack plugkit.plugin.version and be no
// plugin's. Under Finder.KeepDescribed, where it may serve the plugin's
// first use, its metrics are held until then (versionGate), and then
// made with the version.
func (f *Finder) describeTelemetry() (tel host.Telemetry, described func(version string)) {
	tel = f.Host.Telemetry
	if !f.KeepDescribed || tel.MeterProvider == nil {
		tel.MeterProvider = nil
		return tel, func(string) {}
	}
	g := &versionGate{}
	return g.telemetry(tel), g.open
}

// versionAttribute is the plugin's release version as an attribute of
// its metrics and events.
func versionAttribute(version string) attribute.KeyValue {
	return attribute.String("plugkit.plugin.version", version)
}
