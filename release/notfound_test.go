package release

import (
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestMissingVersionIsNamed asks a registry and a mirror for a release
// they do not have: Fetch and Mirror say which repository lacks which
// version and what to do, not only oras-go's "not found".
func TestMissingVersionIsNamed(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	pushFS(t, repo)
	mirror, _ := mirrorTo(t, repo, "2.1.0")
	empty, err := Open(LayoutPrefix+testutil.TempDir(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	check := func(what string, err error, source string) {
		t.Helper()
		for _, want := range []string{source + " has no release 2.0.0", "give a version it has"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: got %v, want it to say %q", what, err, want)
			}
		}
	}
	_, err = Fetch(ctx, repo, "2.0.0")
	check("Fetch from the registry", err, repo.Source)
	_, err = Fetch(ctx, mirror, "2.0.0")
	check("Fetch from the mirror", err, mirror.Source)
	check("Mirror", Mirror(ctx, repo, empty, "2.0.0"), repo.Source)
}
