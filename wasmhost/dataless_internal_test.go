package wasmhost

import (
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
	r := reader{b: module, pos: 8}
	for !r.done() {
		id := r.byte()
		body := r.bytes(int(r.u32()))
		if id == 11 {
			sr := reader{b: body}
			return int(sr.u32())
		}
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return 0
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
