package manager

import (
	"context"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// gateCounts opens a gate with version (unless it is "-") after held
// measurements, makes after more of them while the gate opens, and
// returns the counter's sum per plugkit.plugin.version ("" for none).
func gateCounts(t *testing.T, held, after int, version string) map[string]int64 {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	g := &versionGate{}
	mp := gatedProvider{sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), g}
	c, err := mp.Meter("test").Int64Counter("n")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range held {
		c.Add(ctx, 1)
	}
	var wg sync.WaitGroup
	for range after {
		wg.Go(func() { c.Add(ctx, 1) })
	}
	if version != "-" {
		g.open(version)
	}
	wg.Wait()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				v, _ := dp.Attributes.Value(attribute.Key("plugkit.plugin.version"))
				out[v.AsString()] += dp.Value
			}
		}
	}
	return out
}

// TestVersionGateHoldsBoundedAndDropsUndescribed: a gate records what it
// held, at most maxHeld measurements, with the version once opened, and
// everything after; one never opened (a process never described)
// records nothing; measurements racing the opening are recorded once
// each, with the version.
func TestVersionGateHoldsBoundedAndDropsUndescribed(t *testing.T) {
	t.Parallel()
	if got := gateCounts(t, 3, 0, "2.0.0"); len(got) != 1 || got["2.0.0"] != 3 {
		t.Errorf("3 held, then opened: %v; want 3 with the version", got)
	}
	if got := gateCounts(t, maxHeld+100, 0, "2.0.0"); len(got) != 1 || got["2.0.0"] != maxHeld {
		t.Errorf("%d held, then opened: %v; want %d (the bound) with the version", maxHeld+100, got, maxHeld)
	}
	if got := gateCounts(t, 5, 0, "-"); len(got) != 0 {
		t.Errorf("never opened: %v; want nothing recorded", got)
	}
	if got := gateCounts(t, 0, 40, "2.0.0"); len(got) != 1 || got["2.0.0"] != 40 {
		t.Errorf("40 racing the opening: %v; want 40 with the version", got)
	}
	if got := gateCounts(t, 2, 0, ""); len(got) != 1 || got[""] != 2 {
		t.Errorf("opened with no version: %v; want 2 without the label", got)
	}
}
