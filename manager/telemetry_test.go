package manager_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// observer collects a manager's events, metrics and spans.
type observer struct {
	events chan host.Event
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
}

func observe(t *testing.T) (*observer, host.Telemetry) {
	o := &observer{events: make(chan host.Event, 256), reader: sdkmetric.NewManualReader(), spans: tracetest.NewInMemoryExporter()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(o.spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return o, host.Telemetry{
		TracerProvider: tp,
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.reader)),
		OnEvent:        func(e host.Event) { o.events <- e },
	}
}

// next waits for the next event of type typ, skipping others.
func (o *observer) next(t *testing.T, typ host.EventType) host.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-o.events:
			if e.Type == typ {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s event within 10s", typ)
		}
	}
}

// count is the sum of counter name's points with attribute key=value.
func (o *observer) count(t *testing.T, name, key, value string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, p := range sum.DataPoints {
					if v, ok := p.Attributes.Value(attribute.Key(key)); ok && v.String() == value {
						n += p.Value
					}
				}
			}
		}
	}
	return n
}

// calls is the number of calls otelgrpc measured (the count of
// rpc.client.call.duration) whose attributes include every one of want,
// and the attribute sets it saw.
func (o *observer) calls(t *testing.T, want ...attribute.KeyValue) (int64, []string) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	var seen []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok || m.Name != "rpc.client.call.duration" {
				continue
			}
			for _, p := range h.DataPoints {
				seen = append(seen, p.Attributes.Encoded(attribute.DefaultEncoder()))
				if hasAll(p.Attributes, want) {
					n += int64(p.Count)
				}
			}
		}
	}
	return n, seen
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// spanNames lists the names of the spans recorded.
func (o *observer) spanNames() string {
	var names []string
	for _, s := range o.spans.GetSpans() {
		names = append(names, s.Name)
	}
	return strings.Join(names, ",")
}

// TestPanicIsReportedWithItsStack: a plugin that panics during a call is
// reported by a crashed event carrying the *host.PanicError, with the
// plugin's release version.
func TestPanicIsReportedWithItsStack(t *testing.T) {
	t.Parallel()
	o, tel := observe(t)
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "p", "p 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, Host: host.Options{Telemetry: tel}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Telemetry: tel})
	conn, _ := store(t, m, "p")
	cl := objectstorev2.NewObjectStoreClient(conn)
	if _, err := cl.Init(ctxT(t), &objectstorev2.InitRequest{Config: map[string]string{"panic": "bad bucket"}}); err == nil {
		t.Fatal("Init that panics the plugin succeeded")
	}
	e := o.next(t, host.EventCrashed)
	var pe *host.PanicError
	if !errors.As(e.Cause, &pe) || pe.Message != "bad bucket" || !strings.Contains(pe.Stack, "configBackend).Init(") {
		t.Fatalf("crashed event: %+v; want a PanicError with the message and configBackend.Init in its stack", e)
	}
	if !slices.Contains(e.Attributes, attribute.String("plugkit.plugin.version", "1.0.0")) {
		t.Errorf("crashed event attributes %v; want the plugin's version", e.Attributes)
	}
}
