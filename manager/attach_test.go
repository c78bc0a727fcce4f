package manager_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/plugintest"
	"github.com/plugkit/plugkit/wire"
)

// TestAttach registers an in-process catalog plugin: Lookup finds its
// names, a later Discover keeps them, a second Attach under the same label
// is refused, and a closed Manager refuses Attach.
func TestAttach(t *testing.T) {
	t.Parallel()
	cat, err := catalog.New("1.0.0", catalog.Implement[objectstorev1.ObjectStoreServer]("objectstore", 1, 0, "example.com/attached",
		&objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: backend.NewMemory()}))
	if err != nil {
		t.Fatal(err)
	}
	c := plugintest.Start(t, plugin.Config{Versions: map[int]plugin.Register{wire.CatalogProtocolVersion: cat.Register}}, plugintest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	finder := &manager.Finder{Launch: host.Command{Cookie: plugintest.Cookie}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs(testutil.TempDir(t))}})
	if err := m.Attach(ctx, "in-process", c); err != nil {
		t.Fatal(err)
	}
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	im, err := m.Lookup("objectstore", "example.com/attached")
	if err != nil || im.Path != "in-process" || im.Origin != manager.OriginAttached || im.PluginVersion != "1.0.0" || len(im.Majors) != 1 {
		t.Fatalf("Lookup after Discover: %+v, %v", im, err)
	}
	if err := m.Attach(ctx, "in-process", c); err == nil {
		t.Error("a second Attach under the same label was accepted")
	}
	m.Close()
	if err := m.Attach(ctx, "other", c); !errors.Is(err, manager.ErrClosed) {
		t.Errorf("Attach on a closed Manager: %v, want ErrClosed", err)
	}
}
