//go:build !windows

package manager_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// TestRestartAndHungAreReported: a call is measured per method with the
// plugin's kind, name, binary and version; a crash and a hung plugin make
// the restarted and hung events, their metrics and the manager's spans.
func TestRestartAndHungAreReported(t *testing.T) {
	o, tel := observe(t)
	dir := t.TempDir()
	bin := writePlugin(t, dir, "p", "p 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, Host: host.Options{Telemetry: tel}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Telemetry: tel, Restart: manager.RestartPolicy{HungCheck: 200 * time.Millisecond}})
	conn, _ := store(t, m, "p")
	cl := objectstorev2.NewObjectStoreClient(conn)
	if _, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	n, seen := o.calls(t, attribute.String("plugkit.kind", "objectstore"), attribute.String("plugkit.name", "p"), attribute.String("plugkit.binary", bin),
		attribute.String("plugkit.plugin.version", "1.0.0"), attribute.String("rpc.method", "objectstore.v2.ObjectStore/Exists"), attribute.String("rpc.response.status_code", "OK"))
	if n != 1 {
		t.Errorf("%d Exists calls measured with the kind, name, binary and version; want 1; seen: %s", n, strings.Join(seen, "; "))
	}
	testutil.Kill(conn.Pid())
	waitExited(t, conn)
	if _, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if e := o.next(t, manager.EventRestarted); e.Restarts != 1 || e.Pid != conn.Pid() || e.Binary != bin {
		t.Errorf("restarted: %+v; want restart 1 of %s with the new pid %d", e, bin, conn.Pid())
	}
	if n := o.count(t, "plugkit.plugin.restarts", "plugkit.binary", bin); n != 1 {
		t.Errorf("plugkit.plugin.restarts = %d, want 1", n)
	}
	pid := conn.Pid()
	syscall.Kill(pid, syscall.SIGSTOP)
	for i := 0; i < 100 && procState(pid) != 'T'; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := cl.Exists(ctx, &objectstorev2.ExistsRequest{Key: "k"})
	cancel()
	if err == nil {
		t.Fatal("a call to a stopped process succeeded")
	}
	if e := o.next(t, manager.EventHung); e.Pid != pid {
		t.Errorf("hung: %+v; want pid %d", e, pid)
	}
	if n := o.count(t, "plugkit.plugin.hung", "plugkit.binary", bin); n != 1 {
		t.Errorf("plugkit.plugin.hung = %d, want 1", n)
	}
	names := o.spanNames()
	for _, want := range []string{"plugkit.discover", "plugkit.describe", "plugkit.dispense", "plugkit.restart", "plugkit.start p"} {
		if !strings.Contains(","+names+",", ","+want+",") {
			t.Errorf("no %s span; spans: %s", want, names)
		}
	}
}

// TestGiveUpAndPinRefusalAreReported: a plugin the manager stops
// restarting and a binary refused by its pin make their events.
func TestGiveUpAndPinRefusalAreReported(t *testing.T) {
	t.Parallel()
	o, tel := observe(t)
	dir := t.TempDir()
	bin, crashAtStart := writeCrashingPlugin(t, dir, "p", "p 2")
	writePlugin(t, dir, "pinned", "q 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, Host: host.Options{Telemetry: tel}, Pins: map[string]string{"pinned": strings.Repeat("0", 64)}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Telemetry: tel, Restart: manager.RestartPolicy{Max: 1}})
	if e := o.next(t, host.EventPinRefused); e.Binary != dir+"/pinned" || e.Cause == nil {
		t.Errorf("refused: %+v; want the pinned binary and why", e)
	}
	conn, _ := store(t, m, "p")
	cl := objectstorev2.NewObjectStoreClient(conn)
	if _, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	crashAtStart()
	testutil.Kill(conn.Pid())
	waitExited(t, conn)
	for range 4 {
		cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"})
	}
	if e := o.next(t, manager.EventGaveUp); e.Binary != bin || e.Cause == nil || !strings.Contains(e.Cause.Error(), "segfault at start") {
		t.Errorf("gave up: %+v; want the binary and the last failure", e)
	}
	if n := o.count(t, "plugkit.plugin.gave_up", "plugkit.binary", bin); n != 1 {
		t.Errorf("plugkit.plugin.gave_up = %d, want 1", n)
	}
}
