package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/sandbox"
)

// catalogEnv makes the test binary a catalog plugin (runCatalogPlugin).
const catalogEnv = "PLUGKIT_SANDBOX_TEST_CATALOG"

// hogBackend is an in-memory object store whose Get of "alloc:N"
// allocates and keeps N MiB first.
type hogBackend struct{ *backend.Memory }

func (h hogBackend) Get(key string) ([]byte, error) {
	var mib int
	if _, err := fmt.Sscanf(key, "alloc:%d", &mib); err == nil {
		for range mib {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			hoard = append(hoard, b)
		}
		return []byte("allocated"), nil
	}
	return h.Memory.Get(key)
}

// runCatalogPlugin serves objectstore "hog" at major 2, with Describe.
func runCatalogPlugin() {
	cat, err := catalog.New("1.0.0", catalog.Implement[objectstorev2.ObjectStoreServer]("objectstore", 2, 1, "hog",
		&objectstorev2.ObjectStore_ServiceDesc, backend.V2{B: hogBackend{backend.NewMemory()}}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	catalog.Serve(testCookie, cat)
}

// A plugin its memory limit kills is restarted by the manager as any
// crash: the call that passed the limit fails with an error the
// *sandbox.MemoryLimitError is found in, and the next call is served by a
// new process.
func TestManagerRestartsPluginKilledByMemoryLimit(t *testing.T) {
	bothModes(t, testManagerRestartsPluginKilledByMemoryLimit)
}

func testManagerRestartsPluginKilledByMemoryLimit(t *testing.T) {
	requireSandbox(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(128 << 20)
	if rootless() {
		limit = rlimitMemory()
	}
	finder := &manager.Finder{
		Launch: host.Command{
			Cookie:   testCookie,
			Env:      []string{catalogEnv + "=1", "GORACE=atexit_sleep_ms=0"},
			Runner:   sandbox.Runner{Limits: sandbox.Limits{Memory: limit}},
			Timeouts: host.Timeouts{Start: 10 * time.Second},
		},
		Host: host.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
	}
	m := manager.New(manager.Config{
		Sources: []manager.Source{finder.Files(exe)},
		Restart: manager.RestartPolicy{Backoff: 10 * time.Millisecond},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	t.Cleanup(func() { m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := manager.Dispense(ctx, m, "objectstore", "hog", manager.Majors[*manager.Conn]{
		2: func(c *manager.Conn, _ manager.Info) (*manager.Conn, error) { return c, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	store := objectstorev2.NewObjectStoreClient(conn)
	if _, err := store.Exists(ctx, &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	pid := conn.Pid()
	get, err := store.Get(ctx, &objectstorev2.GetRequest{Key: "alloc:2048"})
	if err == nil {
		_, err = get.Recv()
	}
	if err == nil {
		t.Fatalf("the plugin allocated 2 GiB under its limit of %d bytes", limit)
	}
	var mem *sandbox.MemoryLimitError
	if !errors.As(err, &mem) || mem.Limit != limit {
		t.Fatalf("the call that passed the limit: %v; want an error wrapping *sandbox.MemoryLimitError with limit %d", err, limit)
	}
	if !strings.Contains(err.Error(), "the next call restarts the plugin") {
		t.Errorf("the error %q does not say the plugin will be restarted", err)
	}
	if _, err := store.Exists(ctx, &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatalf("the call after the memory kill: %v", err)
	}
	if now := conn.Pid(); now == pid || now == 0 {
		t.Errorf("the call after the memory kill was served by pid %d; want a new process (was %d)", now, pid)
	}
}
