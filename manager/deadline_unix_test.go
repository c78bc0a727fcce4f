//go:build !windows

package manager_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
)

// A call without a deadline to a hung plugin (stopped with SIGSTOP) ends
// at the manager's deadline for its kind, saying so; a call with a
// deadline of its own keeps it.
func TestCallWithoutDeadlineGetsManagers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		calls manager.CallPolicy
	}{
		{"Deadline", manager.CallPolicy{Deadline: 300 * time.Millisecond}},
		{"Kinds", manager.CallPolicy{Deadline: -1, Kinds: map[string]time.Duration{"objectstore": 300 * time.Millisecond, "other": -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writePlugin(t, dir, "p", "p 2")
			// The hung check, which would kill the stopped plugin, waits
			// longer than the test.
			finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
			m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Calls: tc.calls, Restart: manager.RestartPolicy{HungCheck: time.Minute}})
			conn, _ := store(t, m, "p")
			cl := objectstorev2.NewObjectStoreClient(conn)
			// The first call may start the plugin: a deadline of its own,
			// so that a loaded machine's slow start is not the 300 ms's.
			first, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := cl.Exists(first, &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
				t.Fatal(err)
			}
			pid := conn.Pid()
			syscall.Kill(pid, syscall.SIGSTOP)
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			for i := 0; i < 100 && procState(pid) != 'T'; i++ {
				time.Sleep(5 * time.Millisecond)
			}

			done := make(chan error, 1)
			go func() {
				_, err := cl.Exists(context.Background(), &objectstorev2.ExistsRequest{Key: "k"})
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("a call without a deadline to a hung plugin still waits after 15 s")
			}
			if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "Config.Calls") || !strings.Contains(err.Error(), "300ms") {
				t.Fatalf("the call to the hung plugin: %v; want DeadlineExceeded naming the manager's 300ms deadline", err)
			}

			// A stream without a deadline gets the manager's, too.
			go func() {
				s, err := cl.Get(context.Background(), &objectstorev2.GetRequest{Key: "k"})
				if err == nil {
					_, err = s.Recv()
				}
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("a stream without a deadline from a hung plugin still waits after 15 s")
			}
			if status.Code(err) != codes.DeadlineExceeded {
				t.Errorf("the stream from the hung plugin: %v; want DeadlineExceeded", err)
			}

			// A deadline of the caller's own is the caller's.
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err = cl.Exists(ctx, &objectstorev2.ExistsRequest{Key: "k"})
			if err == nil || strings.Contains(err.Error(), "Config.Calls") {
				t.Errorf("a call with its own deadline: %v; want its own deadline's error, not the manager's", err)
			}
		})
	}
}
