package main

import "testing"

// TestTelemetryFigures: BenchmarkTelemetry's lines become the two figures
// of the cost of observability, with their ratios and goals.
func TestTelemetryFigures(t *testing.T) {
	s := parse([]byte(`BenchmarkTelemetry/16B/plugkit-2         	     200	    100000 ns/op	   0.20 MB/s
BenchmarkTelemetry/16B/plugkit-events-only-2         	     200	    100500 ns/op	   0.25 MB/s
BenchmarkTelemetry/16B/plugkit-traced-2              	     200	    120000 ns/op	   0.18 MB/s
BenchmarkTelemetry/16B/raw-otelgrpc-2                	     200	    100000 ns/op	   0.17 MB/s
`))
	b := &figureSet{s: s}
	b.telemetry()
	want := map[string]struct {
		ratio float64
		met   bool
	}{"unary_16B_no_tracer": {1.005, true}, "unary_16B_traced": {1.2, false}}
	if len(b.figs) != len(want) {
		t.Fatalf("%d figures, want %d: %+v", len(b.figs), len(want), b.figs)
	}
	for _, f := range b.figs {
		w, ok := want[f.Name]
		if !ok || f.Ratio != w.ratio || f.Met == nil || *f.Met != w.met {
			t.Errorf("%s: ratio %v met %v; want %v %v", f.Name, f.Ratio, f.Met, w.ratio, w.met)
		}
	}
	none := &figureSet{s: parse(nil)}
	if none.telemetry(); len(none.figs) != 0 {
		t.Errorf("figures without BenchmarkTelemetry's lines: %+v", none.figs)
	}
}
