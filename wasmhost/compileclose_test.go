package wasmhost_test

import (
	"context"
	"testing"
	"time"

	"github.com/plugkit/plugkit/wasmhost"
)

// TestCloseWaitsForAbandonedCompile: a compile past its timeout returns
// at once, and wazero's compile goes on until its next function; Close
// must wait for it. Before, Close released wazero's store under it, and
// the compile's next write to the store panicked ("assignment to entry in
// nil map"), ending the host's process: a module slow to compile (a
// large or hostile one) and a Close soon after took the host down.
//
// The module is the slow one of TestCompileHonoursContext (200 functions
// of 2,000 blocks: 1.2 MB, inside every limit), not the 22 MB guest:
// its compile outlasts the millisecond as surely, one function at a
// time, and each round costs the decode of 1.2 MB rather than 22 MB under
// the race detector (seconds of CPU per round). Close without its wait
// returns while the compile is at its first functions, which Compiling
// then counts.
func TestCloseWaitsForAbandonedCompile(t *testing.T) {
	module := manyBlockFunctions(200, 2000)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range 3 {
		rt := wasmhost.New(wasmhost.Config{CompileTimeout: time.Millisecond})
		if err := rt.Compile(ctx, module); err == nil {
			t.Fatalf("round %d: a module of 200 functions of 2,000 blocks compiled within a millisecond: the test needs a module slower to compile", i)
		}
		if err := rt.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if n := wasmhost.Compiling(rt); n != 0 {
			t.Fatalf("round %d: Close returned with %d compiles still under way in the store it released", i, n)
		}
	}
}
