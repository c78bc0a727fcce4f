//go:build unix

package release

import (
	"os"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestInstallWaitsOutABusyBinary: a descriptor open for writing on the
// staged binary when Install starts it makes the kernel refuse the start
// (ETXTBSY). In a host program that is what a fork of another goroutine
// does for a moment (the child holds every descriptor until it execs), so
// a multi-threaded host installing a plugin while it starts others failed
// now and then with "text file busy". Install starts it again until the
// descriptor is gone, within a bound; here the writer holds it 300 ms.
func TestInstallWaitsOutABusyBinary(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	rel, _, pub := pushFS(t, repo)
	held := make(chan struct{})
	busy := &installHooks{beforeDescribe: func(tmp string) {
		f, err := os.OpenFile(tmp, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			close(held)
			return
		}
		go func() {
			defer close(held)
			time.Sleep(300 * time.Millisecond)
			f.Close()
		}()
	}}
	dir := testutil.TempDir(t)
	inst, err := Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie, hooks: busy})
	<-held
	if err != nil {
		t.Fatalf("Install with the binary busy for 300 ms: %v; want it started once the writer let go", err)
	}
	if _, err := os.Stat(inst.Path); err != nil {
		t.Fatal(err)
	}
}
