package wasmhost_test

import (
	"errors"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/wasmhost"
)

// TestCloseReportsCauseAtOnce: Close right after a guest died of its
// memory limit, or was stopped for its CPU budget, without waiting for
// Exited, says why, every time (issue 36, point 7): Close must not race
// the guest's end.
func TestCloseReportsCauseAtOnce(t *testing.T) {
	mem, cpu := sharedRuntimeWith(64<<20, 0), sharedRuntimeWith(0, 300*time.Millisecond)
	for i := range 2 {
		c := startGuest(t, command(t, mem))
		if err := exists(c, "alloc"); err == nil {
			t.Fatal("allocating without bound succeeded")
		}
		var me *wasmhost.MemoryError
		if err := c.Close(); !errors.As(err, &me) {
			t.Errorf("run %d: Close at once after the memory limit: %v; want a MemoryError", i, err)
		}
		c = startGuest(t, command(t, cpu))
		if err := exists(c, "spin"); err == nil {
			t.Fatal("a spinning call answered")
		}
		var be *host.BudgetError
		if err := c.Close(); !errors.As(err, &be) {
			t.Errorf("run %d: Close at once after the CPU budget: %v; want a BudgetError", i, err)
		}
	}
	waitEnded(t, mem)
	waitEnded(t, cpu)
}
