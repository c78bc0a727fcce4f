package wasmhost_test

import (
	"context"
	"os"
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
func TestCloseWaitsForAbandonedCompile(t *testing.T) {
	module, err := os.ReadFile(guestModule(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range 3 {
		rt := wasmhost.New(wasmhost.Config{CompileTimeout: time.Millisecond})
		if err := rt.Compile(ctx, module); err == nil {
			t.Fatalf("round %d: the 22 MB guest compiled within a millisecond: the test needs a module slower to compile", i)
		}
		if err := rt.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if n := wasmhost.Compiling(rt); n != 0 {
			t.Fatalf("round %d: Close returned with %d compiles still under way in the store it released", i, n)
		}
	}
}
