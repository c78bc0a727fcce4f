package manager

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugkit/plugkit/host"
)

// tracerName names the manager's spans' tracer.
const tracerName = "github.com/plugkit/plugkit/manager"

// span starts a span of the manager's own operation (Discover, Describe,
// Dispense, a restart) when Config.Host.Telemetry traces, and returns
// the function that ends it with the operation's error.
func (m *Manager) span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(error)) {
	tp := m.cfg.Host.Telemetry.TracerProvider
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
// (restarted, hung, gave up, refused by a pin) through
// Config.Host.Telemetry, and as a log record.
func (m *Manager) report(e host.Event) {
	m.cfg.Host.Telemetry.Report(m.cfg.logger(), e)
}

// telemetryOf is Config.Host.Telemetry for a process (or a connection
// to a service) of a plugin whose release version is version, which its
// metrics and events carry. With no version, that of a launch to
// describe a binary whose version is not known yet, it has no
// MeterProvider: such a short-lived process would make series without
// plugkit.plugin.version, which are no plugin's. It keeps it only under
// Config.KeepDescribed, where the process may serve the plugin's first
// use: its calls through a Conn then carry the version (Conn.metered).
func (m *Manager) telemetryOf(version string) host.Telemetry {
	tel := m.cfg.Host.Telemetry
	switch {
	case version != "":
		tel.Attributes = append(slices.Clip(tel.Attributes), versionAttribute(version))
	case !m.cfg.KeepDescribed:
		tel.MeterProvider = nil
	}
	return tel
}

// versionAttribute is the plugin's release version as an attribute of
// its metrics and events.
func versionAttribute(version string) attribute.KeyValue {
	return attribute.String("plugkit.plugin.version", version)
}
