package main

import "testing"

// TestScaleFigures: BenchmarkScale's metrics become the scale figures:
// start and close against go-plugin, the per-plugin costs against the
// goals, each met or missed.
func TestScaleFigures(t *testing.T) {
	s := parse([]byte("BenchmarkScale-2   \t  1\t  9000000000 ns/op\t" +
		"20.0 plugkit-start-ms\t400 plugkit-close-ms\t9 plugkit-goroutines\t4.003 plugkit-fds\t200 plugkit-rss-KiB\t" +
		"70.0 goplugin-start-ms\t500 goplugin-close-ms\t15 goplugin-goroutines\t4 goplugin-fds\t210 goplugin-rss-KiB\n"))
	b := &figureSet{s: s}
	b.scale()
	want := map[string]struct {
		ratio float64
		met   bool
	}{
		"scale_300_start":             {0.286, true},  // 20 / 70
		"scale_300_close_all":         {0.8, true},    // 400 / 500
		"scale_goroutines_per_plugin": {1.125, false}, // 9 / 8
		"scale_fds_per_plugin":        {1, true},      // 4.003 (one descriptor shared by 300) / 4
		"scale_rss_per_plugin":        {0.952, true},  // 200 / 210
	}
	if len(b.figs) != len(want) {
		t.Fatalf("%d figures, want %d: %+v", len(b.figs), len(want), b.figs)
	}
	for _, f := range b.figs {
		w, ok := want[f.Name]
		if !ok || f.Ratio != w.ratio || f.Met == nil || *f.Met != w.met {
			t.Errorf("%s: ratio %v met %v; want %v %v", f.Name, f.Ratio, f.Met, w.ratio, w.met)
		}
	}
	if g := b.figs[2].GoPlugin; g == nil || *g != 15 {
		t.Errorf("go-plugin's goroutines per plugin: %v, want 15", g)
	}
	none := &figureSet{s: parse(nil)}
	if none.scale(); len(none.figs) != 0 {
		t.Errorf("figures without BenchmarkScale's line: %+v", none.figs)
	}
}
