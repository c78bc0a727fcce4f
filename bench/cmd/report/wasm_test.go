package main

import "testing"

// TestWasmStartFigures: BenchmarkWasmColdStart's snapshot and native
// lines become the first answer against its goal (met or missed) and
// against native start (reported).
func TestWasmStartFigures(t *testing.T) {
	s := parse([]byte("BenchmarkWasmColdStart/snapshot-2 \t 15\t 30000000 ns/op\t 12.00 ms-to-first-answer\t 18.0 cpu-ms/op\n" +
		"BenchmarkWasmColdStart/native-2 \t 15\t 20000000 ns/op\t 8.000 ms-to-first-answer\n"))
	b := &figureSet{s: s}
	b.wasmStart()
	if len(b.figs) != 2 {
		t.Fatalf("%d figures, want 2: %+v", len(b.figs), b.figs)
	}
	if f := b.figs[0]; f.Name != "wasm_first_answer" || f.Plugkit != 12 || f.Ratio != 1.2 || f.Met == nil || *f.Met {
		t.Errorf("first answer against the goal: %+v; want 12 ms, 1.2x, missed", f)
	}
	if f := b.figs[1]; f.Name != "wasm_first_answer_vs_native" || f.Ratio != 1.5 || f.Met != nil {
		t.Errorf("first answer against native: %+v; want 1.5x, reported", f)
	}
	none := &figureSet{s: parse(nil)}
	if none.wasmStart(); len(none.figs) != 0 {
		t.Errorf("figures without BenchmarkWasmColdStart's lines: %+v", none.figs)
	}
}
