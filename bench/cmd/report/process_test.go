package main

import (
	"context"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestProcessFigures: the report's whole-process lines and
// BenchmarkStartClose's metrics become the floor, inspect, start and close
// figures, each against its goal.
func TestProcessFigures(t *testing.T) {
	var raw strings.Builder
	for _, ms := range []string{"4000000", "4200000", "3900000"} {
		raw.WriteString("BenchmarkProcess/floor/pkplugin\t1\t" + ms + " ns/op\n")
		raw.WriteString("BenchmarkProcess/floor/plugkit\t1\t6000000 ns/op\n")
		raw.WriteString("BenchmarkProcess/inspect/plugkit\t1\t15000000 ns/op\n")
		raw.WriteString("BenchmarkProcess/inspect/goplugin\t1\t30000000 ns/op\n")
	}
	raw.WriteString("BenchmarkStartClose-2   \t  87\t  12025799 ns/op\t  1.5 close-ms\t  4.0 floor-ms\t  6.5 start-ms\n")
	b := &figureSet{s: parse([]byte(raw.String()))}
	b.floors()
	b.startClose()
	want := map[string]struct {
		value, ratio float64
		met          *bool // nil: reported only
	}{
		"floor_plugin":                 {4, 0, nil},
		"floor_plugkit_cli":            {6, 0, nil},
		"inspect_vs_floors":            {15, 1.5, ptr(true)},     // 15 / (4 + 6)
		"inspect_vs_goplugin":          {15, 0.5, ptr(false)},    // 15 / 30
		"start_to_first_call_automtls": {6.5, 1.083, ptr(false)}, // 6.5 / (4 + 2)
		"close_cooperative":            {1.5, 0.75, ptr(true)},
	}
	if len(b.figs) != len(want) {
		t.Fatalf("%d figures, want %d: %+v", len(b.figs), len(want), b.figs)
	}
	for _, f := range b.figs {
		w, ok := want[f.Name]
		switch {
		case !ok:
			t.Errorf("unexpected figure %s", f.Name)
		case f.Plugkit != w.value || f.Ratio != w.ratio:
			t.Errorf("%s: %v ms, ratio %v; want %v, %v", f.Name, f.Plugkit, f.Ratio, w.value, w.ratio)
		case (f.Met == nil) != (w.met == nil) || (f.Met != nil && *f.Met != *w.met):
			t.Errorf("%s: met %v, want %v", f.Name, f.Met, w.met)
		}
	}
	none := &figureSet{s: parse(nil)}
	none.floors()
	if none.startClose(); len(none.figs) != 0 {
		t.Errorf("figures without their lines: %+v", none.figs)
	}
}

func ptr(v bool) *bool { return &v }

// TestRunOnceChecksExitCode: a whole-process run that exits with another
// status than its case expects (a plugin that did not say what it is, an
// inspect that failed) is an error, not a figure.
func TestRunOnceChecksExitCode(t *testing.T) {
	testutil.NotOnWindows(t, "it runs the unix commands true and false; the report is made on the Linux benchmark machine")
	ctx := context.Background()
	if _, err := runOnce(ctx, t.TempDir(), procCase{name: "false", args: []string{"false"}, exitCode: 1}); err != nil {
		t.Errorf("false, want status 1: %v", err)
	}
	if _, err := runOnce(ctx, t.TempDir(), procCase{name: "true", args: []string{"true"}, exitCode: 1}); err == nil {
		t.Error("true, want status 1: no error")
	}
	if _, err := runOnce(ctx, t.TempDir(), procCase{name: "missing", args: []string{"{dir}/no-such-binary"}, exitCode: 0}); err == nil {
		t.Error("a missing binary: no error")
	}
}
