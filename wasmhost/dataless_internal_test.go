package wasmhost

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
)

// dataModule is a module with one memory and two active data segments,
// with a data count section when counted.
func dataModule(counted bool) []byte {
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0, 5, 3, 1, 0, 1} // (memory 1)
	if counted {
		m = append(m, 12, 1, 2) // (data count 2)
	}
	// (data (i32.const 0) "hi") (data (i32.const 16) "x")
	return append(m, 11, 14, 2, 0, 0x41, 0, 0x0b, 2, 'h', 'i', 0, 0x41, 16, 0x0b, 1, 'x')
}

// dataSegments is how many data segments module declares.
func dataSegments(t *testing.T, module []byte) int {
	t.Helper()
	sr := reader{b: dataSection(t, module)}
	return int(sr.u32())
}

// dataSection is the body of module's data section, nil without one.
func dataSection(t *testing.T, module []byte) []byte {
	t.Helper()
	r := reader{b: module, pos: 8}
	for !r.done() {
		if _, id, body := r.section(); id == 11 {
			return body
		}
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return nil
}

// A start from a snapshot instantiates the module's data-less form, in
// which wazero walks every data segment: Go's linker writes up to
// 100,000 (a 2.4 MB table built and walked at each start). A module
// whose code cannot name a segment (no data count section) keeps none;
// one with the section keeps each, passive and empty, so that the
// indices its code names hold. Both compile.
func TestWithoutDataDropsSegments(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	for _, c := range []struct {
		counted bool
		want    int
	}{{false, 0}, {true, 2}} {
		stripped, ok := withoutData(dataModule(c.counted))
		if !ok {
			t.Fatalf("data count section %v: withoutData found no data", c.counted)
		}
		if got := dataSegments(t, stripped); got != c.want {
			t.Errorf("data count section %v: the data-less form has %d data segments, want %d", c.counted, got, c.want)
		}
		m, err := rt.CompileModule(ctx, stripped)
		if err != nil {
			t.Fatalf("data count section %v: the data-less form does not compile: %v", c.counted, err)
		}
		mod, err := rt.InstantiateWithConfig(ctx, stripped, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			t.Fatal(err)
		}
		if b, ok := mod.Memory().Read(0, 32); !ok || string(b[:2]) != "\x00\x00" || b[16] != 0 {
			t.Errorf("data count section %v: the data-less form wrote its data: %q", c.counted, b)
		}
		mod.Close(ctx)
		m.Close(ctx)
	}
}

// FuzzWithoutData: withoutData reads the module a guest's author wrote
// (after wazero and validate have accepted it, and the fuzzer feeds it
// what they would refuse as well). Whatever the bytes, it returns without
// panicking, and a data-less form it returns keeps no data: each segment
// of its data section is passive and empty, and run again on that form it
// gives the same bytes.
func FuzzWithoutData(f *testing.F) {
	for _, counted := range []bool{false, true} {
		m := dataModule(counted)
		f.Add(m)
		f.Add(m[:len(m)-3]) // its last segment cut short
		kind := bytes.LastIndex(m, []byte{11, 14, 2}) + 3
		unknown := append([]byte(nil), m...)
		unknown[kind] = 7 // a segment kind wasm does not have
		f.Add(unknown)
		more := append([]byte(nil), m...)
		more[kind-1] = 3 // three segments said, two there
		f.Add(more)
	}
	f.Fuzz(func(t *testing.T, module []byte) {
		out, ok := withoutData(module)
		if !ok {
			return
		}
		sr := reader{b: dataSection(t, out)}
		for i := range sr.u32() {
			if kind, size := sr.u32(), sr.u32(); sr.err != nil || kind != 1 || size != 0 {
				t.Fatalf("the data-less form's segment %d: kind %d, %d bytes (%v); want passive (1) and empty", i, kind, size, sr.err)
			}
		}
		again, ok := withoutData(out)
		if !ok || !bytes.Equal(again, out) {
			t.Fatalf("withoutData of its own data-less form: %v, %x; want %x", ok, again, out)
		}
	})
}
