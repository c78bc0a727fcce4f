package wasmhost_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plugkit/plugkit/wasmhost"
)

// TestModuleSizeLimit: a module larger than Limits.ModuleSize is refused
// before it is compiled, with the *LimitError that names the field; the
// same module under a larger limit compiles (the check refuses no more
// than it says).
func TestModuleSizeLimit(t *testing.T) {
	mod := manyFunctions(1000) // some 4 KB
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	small := wasmhost.New(wasmhost.Config{Interpret: true, Limits: wasmhost.Limits{ModuleSize: 1024}})
	defer small.Close(ctx)
	var le *wasmhost.LimitError
	if err := small.Compile(ctx, mod); !errors.As(err, &le) || le.Field != "Limits.ModuleSize" || le.Have != uint64(len(mod)) {
		t.Errorf("a %d-byte module under Limits.ModuleSize 1024: %v; want a *LimitError naming Limits.ModuleSize", len(mod), err)
	}
	large := wasmhost.New(wasmhost.Config{Interpret: true, Limits: wasmhost.Limits{ModuleSize: 1 << 20}})
	defer large.Close(ctx)
	if err := large.Compile(ctx, mod); err != nil {
		t.Errorf("the same module under 1 MiB: %v", err)
	}
}

// TestBombsCompileWhenAllowed: the modules the bomb tests refuse are
// valid WebAssembly, refused only for the limits (each compiles with the
// limit it passed raised), so those tests prove the limits and not a
// mistake in the encoder.
func TestBombsCompileWhenAllowed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, c := range map[string]struct {
		mod          []byte
		tight, loose wasmhost.Config
	}{
		"locals":    {localsBomb(60_000), wasmhost.Config{}, wasmhost.Config{Limits: wasmhost.Limits{Locals: 100_000}}},
		"table":     {tableGrowBomb(1 << 27), wasmhost.Config{}, wasmhost.Config{MemoryLimit: 64 << 30}},
		"functions": {manyFunctions(2000), wasmhost.Config{Limits: wasmhost.Limits{Functions: 1000}}, wasmhost.Config{}},
		"nested":    {nestedBlocks(500), wasmhost.Config{Limits: wasmhost.Limits{Blocks: 400}}, wasmhost.Config{}},
	} {
		for _, cfg := range []wasmhost.Config{c.tight, c.loose} {
			cfg.Interpret = true
			rt := wasmhost.New(cfg)
			err := rt.Compile(ctx, c.mod)
			rt.Close(ctx)
			var le *wasmhost.LimitError
			if tight := cfg.Limits == c.tight.Limits && cfg.MemoryLimit == c.tight.MemoryLimit; tight && !errors.As(err, &le) {
				t.Errorf("%s under its limit: %v; want a *LimitError", name, err)
			} else if !tight && err != nil {
				t.Errorf("%s with the limit raised: %v", name, err)
			}
		}
	}
}
