package main

import "testing"

// TestRemoteFigures: BenchmarkRemote's metrics become the remote figures:
// the ratio is the median of the runs' paired ratios (not the ratio of
// the medians), its spread across runs, each goal met or missed; the
// service called by grpc-go's client is reported only.
func TestRemoteFigures(t *testing.T) {
	var out []byte
	for _, run := range []string{
		"100 plugkit-us\t90 grpc-go-us\t95 grpc-go-to-service-us\t1.04 ratio\t40 plugkit-service-cpu-us/call\t38 grpc-go-service-cpu-us/call",
		"120 plugkit-us\t100 grpc-go-us\t99 grpc-go-to-service-us\t1.06 ratio",
		"110 plugkit-us\t110 grpc-go-us\t97 grpc-go-to-service-us\t1.08 ratio",
	} {
		out = append(out, "BenchmarkRemote/unary_16B-2   \t  200\t  9000000 ns/op\t"+run+"\n"...)
	}
	out = append(out, "BenchmarkRemote/stream-2   \t  4\t  900000000 ns/op\t600 plugkit-MB/s\t700 grpc-go-MB/s\t650 grpc-go-to-service-MB/s\t0.9 ratio\n"...)
	b := &figureSet{s: parse(out)}
	b.remote()
	want := []struct {
		name                string
		plugkit, base, rate float64
		spread              float64
		met                 *bool
	}{
		{"remote_unary_16B_mtls", 110, 100, 1.06, 0.038, ptr(false)}, // (1.08-1.04)/1.06
		{"remote_unary_16B_mtls_service", 97, 100, 0.97, 0, nil},
		{"remote_unary_16B_mtls_service_cpu", 40, 38, 1.053, 0, nil},
		{"remote_stream_mtls", 600, 700, 0.9, 0, ptr(false)},
		{"remote_stream_mtls_service", 650, 700, 0.929, 0, nil},
		{"remote_stream_mtls_service_cpu", 0, 0, 0, 0, nil},
	}
	if len(b.figs) != len(want) {
		t.Fatalf("%d figures, want %d: %+v", len(b.figs), len(want), b.figs)
	}
	for i, w := range want {
		f := b.figs[i]
		if f.Name != w.name || f.Plugkit != w.plugkit || f.Baseline != w.base || f.Ratio != w.rate || f.Spread != w.spread ||
			(f.Met == nil) != (w.met == nil) || (f.Met != nil && *f.Met != *w.met) {
			t.Errorf("figure %d: %+v (met %v); want %+v (met %v)", i, f, f.Met, w, w.met)
		}
	}
	none := &figureSet{s: parse(nil)}
	if none.remote(); len(none.figs) != 0 {
		t.Errorf("figures without BenchmarkRemote's lines: %+v", none.figs)
	}
}
