package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestWithKept: a regenerated report keeps what follows the marker in the
// old one, and adds nothing when the old one has no marker.
func TestWithKept(t *testing.T) {
	path := filepath.Join(testutil.TempDir(t), "BENCHMARKS.md")
	if got := withKept("# new\n", path); got != "# new\n" {
		t.Errorf("no old report: %q", got)
	}
	os.WriteFile(path, []byte("# old\nold figures\n\n"+keptMarker+"\n## Matrix\n123 ms\n"), 0o644)
	want := "# new\n\n" + keptMarker + "\n## Matrix\n123 ms\n"
	if got := withKept("# new\n", path); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	os.WriteFile(path, []byte("# old without marker\n"), 0o644)
	if got := withKept("# new\n", path); got != "# new\n" {
		t.Errorf("old report without the marker: %q", got)
	}
}
