package host

import (
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/plugkit/plugkit/wire"
)

// TestWithHostPID: a plugin run directly learns its host's pid; one run
// through a Runner does not (a wrapper or a namespace stands between
// them), and a pid the host itself inherited never reaches either.
func TestWithHostPID(t *testing.T) {
	inherited := []string{"A=1", wire.EnvHostPID + "=12345", "B=2"}
	own := wire.EnvHostPID + "=" + strconv.Itoa(os.Getpid())
	if got := withHostPID(slices.Clone(inherited), true); !slices.Equal(got, []string{"A=1", "B=2", own}) {
		t.Errorf("direct: %q, want the inherited pid replaced by %q", got, own)
	}
	if got := withHostPID(slices.Clone(inherited), false); !slices.Equal(got, []string{"A=1", "B=2"}) {
		t.Errorf("through a runner: %q, want no host pid", got)
	}
}
