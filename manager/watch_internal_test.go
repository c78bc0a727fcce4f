package manager

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestPollSeesAChangeOnceSettled is the watch of systems without inotify:
// a change is reported once two looks agree, and the watch stops with
// its context.
func TestPollSeesAChangeOnceSettled(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	f := &Finder{}
	w, err := f.watchSet([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan struct{}, 1)
	startPoll(ctx, w, 10*time.Millisecond, out)
	if err := os.WriteFile(filepath.Join(dir, ".tmp1-plugkit-a"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, ".tmp1-plugkit-a"), filepath.Join(dir, "plugkit-a")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-out:
	case <-time.After(30 * time.Second):
		t.Fatal("polling did not report a binary renamed into the directory")
	}
	cancel()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-out:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("polling did not stop with its context")
		}
	}
}
