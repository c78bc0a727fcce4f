package manager_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

// memoryService serves the v1-only memory store as a plugin service.
func memoryService(t *testing.T, env map[string]string) (string, func() error) {
	cat, err := catalog.New("1.3.0",
		catalog.Implement[objectstorev1.ObjectStoreServer](objectstore.Kind, 1, 0, "example.com/memory",
			&objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: backend.NewMemory()}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return remotetest.Start(t, env, "", plugin.Config{Versions: map[int]plugin.Register{wire.CatalogProtocolVersion: cat.Register}})
}

func TestRemoteEntryDispensesWithAdapter(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	pki, err := remotetest.NewPKI(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := memoryService(t, pki.ServiceEnv("127.0.0.1:0"))
	remotes := filepath.Join(dir, "remotes.json")
	if err := os.WriteFile(remotes, fmt.Appendf(nil, `{"remotes":[{"kind":"objectstore","name":"example.com/memory","endpoints":[%q],
		"tls":{"ca":"ca.crt","cert":"host.crt","key":"host.key"}}]}`, addr), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cache := filepath.Join(dir, "plugins.cache.json")
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}, CacheFile: cache}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.RemotesFile(remotes)}})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	im, err := m.Lookup(objectstore.Kind, "example.com/memory")
	if err != nil || im.Path != addr || im.Origin != manager.OriginRemote || im.PluginVersion != "1.3.0" {
		t.Fatalf("Lookup = %+v, %v", im, err)
	}
	// A v2 host, a v1-only plugin across the network: the adapter.
	store, err := objectstore.Open(ctx, m, "example.com/memory")
	if err != nil {
		t.Fatal(err)
	}
	if info := store.Info(); info.Major != 1 || !info.Adapted {
		t.Fatalf("Info = %+v; want major 1 through the adapter", info)
	}
	if err := store.Put(ctx, "k", []byte("remote value")); err != nil {
		t.Fatal(err)
	}
	if got, err := store.Get(ctx, "k"); err != nil || string(got) != "remote value" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if st, err := store.Stat(ctx, "k"); err != nil || st.Size != int64(len("remote value")) {
		t.Fatalf("Stat (v2, adapted) = %+v, %v", st, err)
	}
	if finder.Launches() != 0 {
		t.Fatalf("%d processes launched for a remote plugin", finder.Launches())
	}

	// The description is cached: a manager that finds the service down
	// still knows the plugin, and says what is wrong when used.
	m.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	m2F := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}, CacheFile: cache, DescribeTimeout: 2 * time.Second}
	m2 := manager.New(manager.Config{Sources: []manager.Source{m2F.RemotesFile(remotes)}})
	defer m2.Close()
	if err := m2.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	bins := m2.Entries()
	if len(bins) != 1 || !bins[0].Cached || bins[0].Err != nil {
		t.Fatalf("with the service down: %+v; want its cached description", bins)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	s, err := objectstore.Open(short, m2, "example.com/memory")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(short, "k", nil); err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("a call with the service down = %v; want an error naming %s", err, addr)
	}
}

func TestRemoteEntryErrors(t *testing.T) {
	t.Parallel()
	dir := testutil.TempDir(t)
	pki, err := remotetest.NewPKI(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := memoryService(t, pki.ServiceEnv("127.0.0.1:0"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Remotes(
		manager.Remote{Kind: objectstore.Kind, Name: "example.com/other", Remote: host.Remote{Endpoints: []string{addr}}, TLS: pki.HostTLS()},
	)}})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = m.Lookup(objectstore.Kind, "example.com/other")
	if err == nil || !strings.Contains(err.Error(), `its catalog has no objectstore "example.com/other"`) || !strings.Contains(err.Error(), "example.com/memory") {
		t.Fatalf("Lookup of a name the service does not serve = %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"remotes":[{"kind":"objectstore","name":"x","endpoint":["a:1"]}]}`), 0o600)
	if _, err := manager.LoadRemotes(bad); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Fatalf("LoadRemotes with a misspelt field = %v", err)
	}
}
