//go:build !windows

package manager_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
)

// The test below stops a plugin with SIGSTOP, which Windows lacks.

func TestHungPluginIsKilledAndRestarted(t *testing.T) {
	dir := t.TempDir()
	writePlugin(t, dir, "p", "p 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Restart: manager.RestartPolicy{HungCheck: 200 * time.Millisecond}})
	conn, _ := store(t, m, "p")
	cl := objectstorev2.NewObjectStoreClient(conn)
	if _, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatal(err)
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
	deadline := time.Now().Add(5 * time.Second)
	for conn.Pid() == pid && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatalf("call after the hung plugin was killed: %v", err)
	}
	if conn.Pid() == pid {
		t.Error("the hung process is still the one serving")
	}
}

// procState is the state letter of a process in /proc (R, S, T, Z...).
func procState(pid int) byte {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 || i+2 >= len(data) {
		return 0
	}
	return data[i+2]
}
