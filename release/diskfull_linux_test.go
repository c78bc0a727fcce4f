package release

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/plugkit/plugkit/examples/objectstore"
)

// TestInstallOnFullDiskLeavesNoPartialFile installs a ~20 MB plugin into
// a 1 MiB tmpfs (needs root to mount): the write fails with ENOSPC, the
// error says nothing was installed, and the directory holds no partial
// binary or temporary file.
func TestInstallOnFullDiskLeavesNoPartialFile(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	rel, _, pub := pushFS(t, repo)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a 1 MiB tmpfs (the test needs root, as CI has): %v\n%s", err, out)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	_, err := Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "nothing was installed") {
		t.Fatalf("got %v, want ENOSPC and nothing installed", err)
	}
	assertOnly(t, dir)
}
