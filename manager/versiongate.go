package manager

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/plugkit/plugkit/host"
)

// maxHeld bounds the measurements a versionGate holds before the
// version is known. A kept process makes four before its Describe
// answer (its start, its health check, its start's duration, the
// Describe call); more come only from calls the plugin makes to the host
// within DescribeTimeout, and those beyond the bound are dropped.
const maxHeld = 64

// versionGate holds the measurements of a process started to describe a
// plugin and kept for its first use (Finder.KeepDescribed), which was
// started before its release version was known. Once the Describe answer
// gives the version (open), it records what it holds, and everything
// after, with the version; a process never described (its Describe
// failed, and it was stopped) records nothing. So no series lacks the
// version, and the kept process is counted as any other of the plugin.
type versionGate struct {
	known atomic.Pointer[gateVersion] // nil until open
	mu    sync.Mutex
	held  []func(metric.MeasurementOption) // at most maxHeld
}

// gateVersion is the version a gate adds, as a measurement option and as
// an event's attributes (none for a plugin that gives no version).
type gateVersion struct {
	opt   metric.MeasurementOption
	attrs []attribute.KeyValue
}

// record makes a measurement now with the version, if known, or holds
// it until it is.
func (g *versionGate) record(measure func(metric.MeasurementOption)) {
	if v := g.known.Load(); v != nil {
		measure(v.opt)
		return
	}
	g.mu.Lock()
	if v := g.known.Load(); v != nil {
		g.mu.Unlock()
		measure(v.opt)
		return
	}
	if len(g.held) < maxHeld {
		g.held = append(g.held, measure)
	}
	g.mu.Unlock()
}

// open records what g holds, and from now on every measurement, with
// the plugin's release version.
func (g *versionGate) open(version string) {
	v := &gateVersion{opt: metric.WithAttributes()}
	if version != "" {
		v.attrs = []attribute.KeyValue{versionAttribute(version)}
		v.opt = metric.WithAttributes(v.attrs...)
	}
	g.mu.Lock()
	held := g.held
	g.held = nil
	g.known.Store(v)
	g.mu.Unlock()
	for _, measure := range held {
		measure(v.opt)
	}
}

// telemetry is tel with its metrics held by g, and its events given the
// version once g knows it.
func (g *versionGate) telemetry(tel host.Telemetry) host.Telemetry {
	tel.MeterProvider = gatedProvider{tel.MeterProvider, g}
	if onEvent := tel.OnEvent; onEvent != nil {
		tel.OnEvent = func(e host.Event) {
			if v := g.known.Load(); v != nil && len(v.attrs) > 0 {
				e.Attributes = append(slices.Clip(e.Attributes), v.attrs...)
			}
			onEvent(e)
		}
	}
	return tel
}

// gatedProvider makes the instruments of a process a versionGate holds.
type gatedProvider struct {
	metric.MeterProvider
	g *versionGate
}

func (p gatedProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return gatedMeter{m: p.MeterProvider.Meter(name, opts...), g: p.g}
}

// gatedMeter makes the kinds of instrument that the host's lifecycle
// metrics and otelgrpc use (Int64Counter, Float64Histogram) through the
// gate; any other kind records nothing, rather than a series without the
// version.
type gatedMeter struct {
	metricnoop.Meter
	m metric.Meter
	g *versionGate
}

func (m gatedMeter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	c, err := m.m.Int64Counter(name, opts...)
	return gatedCounter{c, m.g}, err
}

func (m gatedMeter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	h, err := m.m.Float64Histogram(name, opts...)
	return gatedHistogram{h, m.g}, err
}

type gatedCounter struct {
	metric.Int64Counter
	g *versionGate
}

func (c gatedCounter) Add(ctx context.Context, n int64, opts ...metric.AddOption) {
	opts = slices.Clone(opts) // held past the call
	c.g.record(func(v metric.MeasurementOption) { c.Int64Counter.Add(ctx, n, append(opts, v)...) })
}

type gatedHistogram struct {
	metric.Float64Histogram
	g *versionGate
}

func (h gatedHistogram) Record(ctx context.Context, x float64, opts ...metric.RecordOption) {
	opts = slices.Clone(opts) // held past the call
	h.g.record(func(v metric.MeasurementOption) { h.Float64Histogram.Record(ctx, x, append(opts, v)...) })
}
