package manager_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// TestLyingDescribe: a plugin whose Describe answer claims a major it does
// not serve is dispensed, and its calls say that its Describe answer is
// wrong (keeping the Unimplemented status); a 10 MB answer and one
// without a kind name are refused at Describe, and the 10 MB answer is
// neither kept nor cached. Nothing hangs.
func TestLyingDescribe(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	liar := writePlugin(t, dir, "liar", "liar")
	writePlugin(t, dir, "huge", "huge")
	writePlugin(t, dir, "nameless", "nameless")
	writePlugin(t, dir, "good", "x 1")
	cache := filepath.Join(testutil.TempDir(t), "cache.json")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: cache}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})

	reasons := map[string]string{}
	for _, b := range m.Entries() {
		if b.Err != nil {
			reasons[strings.TrimSuffix(filepath.Base(b.Path), ".exe")] = b.Err.Error()
			if b.Description != nil {
				t.Errorf("%s: refused, but its description is kept", b.Path)
			}
		}
	}
	for name, want := range map[string][]string{
		"huge":     {"catalog Describe: the answer is larger than the 1048576 bytes", "fix the plugin"},
		"nameless": {"catalog Describe: the answer is malformed: kind #1 has no name"},
	} {
		for _, w := range want {
			if !strings.Contains(reasons[name], w) {
				t.Errorf("%s: reason %q lacks %q", name, reasons[name], w)
			}
		}
	}
	if len(reasons) != 2 {
		t.Errorf("unusable binaries %q, want huge and nameless", reasons)
	}
	if fi, err := os.Stat(cache); err != nil || fi.Size() > 64<<10 {
		t.Errorf("the cache file: %v, %v; want it small (the 10 MB answer not cached)", fi, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	store, err := manager.Dispense(ctx, m, "objectstore", "liar", manager.Majors[objectstorev2.ObjectStoreClient]{
		2: func(c *manager.Conn, _ manager.Info) (objectstorev2.ObjectStoreClient, error) {
			return objectstorev2.NewObjectStoreClient(c), nil
		},
	})
	if err != nil {
		t.Fatalf("Dispense of the liar: %v", err)
	}
	check := func(call string, err error) {
		t.Helper()
		if status.Code(err) != codes.Unimplemented {
			t.Errorf("%s: %v, want Unimplemented", call, err)
		}
		for _, want := range []string{liar, `objectstore "liar" at major 2.1`, "does not serve objectstore.v2.ObjectStore", "Describe answer is wrong"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v lacks %q", call, err, want)
			}
		}
	}
	_, err = store.Exists(ctx, &objectstorev2.ExistsRequest{Key: "k"})
	check("Exists (unary)", err)
	get, err := store.Get(ctx, &objectstorev2.GetRequest{Key: "k"})
	if err == nil {
		_, err = get.Recv()
	}
	check("Get (stream)", err)
}
