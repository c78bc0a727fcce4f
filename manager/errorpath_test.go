package manager_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// TestAnsweredErrorsDoNotWait: an Internal status a live plugin chose as
// its answer is returned as it is, without waiting for anything (it used
// to wait 100 ms for an exit that never came); a call whose plugin died
// under it waits for the process's exit and says the plugin died.
func TestAnsweredErrorsDoNotWait(t *testing.T) {
	t.Parallel()
	var waits atomic.Int32
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "p", "p 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	manager.SetExitWaitHook(m, func() { waits.Add(1) })
	conn, _ := store(t, m, "p")
	cl := objectstorev2.NewObjectStoreClient(conn)
	for range 3 {
		_, err := cl.Stat(ctxT(t), &objectstorev2.StatRequest{Key: internalKey}) // unary
		checkInternal(t, "Stat", err)
		s, err := cl.Get(ctxT(t), &objectstorev2.GetRequest{Key: internalKey}) // a stream
		if err == nil {
			_, err = s.Recv()
		}
		checkInternal(t, "Get", err)
	}
	if n := waits.Load(); n != 0 {
		t.Fatalf("%d of 6 Internal answers of a live plugin waited for its exit, want none", n)
	}
	pid := conn.Pid()
	_, err := cl.Init(ctxT(t), &objectstorev2.InitRequest{Config: map[string]string{"panic": "bad bucket"}})
	if err == nil || !strings.Contains(err.Error(), "died during") {
		t.Fatalf("Init that crashed plugin %d returned %v, want it to say the plugin died", pid, err)
	}
	if n := waits.Load(); n != 1 {
		t.Errorf("the crashed call waited for the exit %d times, want 1", n)
	}
}

func checkInternal(t *testing.T, call string, err error) {
	t.Helper()
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "as asked") {
		t.Fatalf("%s answered with Internal by the plugin returned %v, want that Internal", call, err)
	}
	if strings.Contains(err.Error(), "died") {
		t.Fatalf("a live plugin's Internal answer to %s was taken for a crash: %v", call, err)
	}
}

// BenchmarkCallErrorPath compares a call a live plugin answers with OK
// and one it answers with Internal: the error path must cost about what
// the success path costs (ns/op of "internal" within 1.1x of "ok").
func BenchmarkCallErrorPath(b *testing.B) {
	dir := testutil.TempDir(b)
	writePlugin(b, dir, "p", "p 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(b, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
	conn, _ := store(b, m, "p")
	cl := objectstorev2.NewObjectStoreClient(conn)
	for _, bc := range []struct {
		name, key string
		want      codes.Code
	}{{"ok", "__config__", codes.OK}, {"internal", internalKey, codes.Internal}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := ctxT(b)
			for b.Loop() {
				_, err := cl.Stat(ctx, &objectstorev2.StatRequest{Key: bc.key})
				if status.Code(err) != bc.want {
					b.Fatalf("Get %q: %v, want %v", bc.key, err, bc.want)
				}
			}
		})
	}
}
