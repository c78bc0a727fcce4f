//go:build unix

package manager_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
)

// greeter is the host's own interface: the latest API it knows.
type greeter interface {
	Has(ctx context.Context, key string) (bool, error)
}

type v2Greeter struct {
	c objectstorev2.ObjectStoreClient
}

func (g v2Greeter) Has(ctx context.Context, key string) (bool, error) {
	r, err := g.c.Exists(ctx, &objectstorev2.ExistsRequest{Key: key})
	return r.GetExists(), err
}

// v1Greeter is the adapter from major 1.
type v1Greeter struct {
	c objectstorev1.ObjectStoreClient
}

func (g v1Greeter) Has(ctx context.Context, key string) (bool, error) {
	r, err := g.c.Exists(ctx, &objectstorev1.ExistsRequest{Key: key})
	return r.GetExists(), err
}

// ExampleDispense discovers a directory holding two plugins (this test
// binary in plugin mode, behind small scripts) and dispenses the latest
// interface of each: directly from the plugin that speaks major 2, through
// the adapter from the one that speaks only major 1.
func ExampleDispense() {
	dir, _ := os.MkdirTemp("", "plugins")
	defer os.RemoveAll(dir)
	exe, _ := os.Executable()
	for file, mode := range map[string]string{"new": "example.com/new 1,2", "old": "example.com/old 1"} {
		script := fmt.Sprintf("#!/bin/sh\n%s='%s' GORACE=atexit_sleep_ms=0 exec '%s'\n", modeEnv, mode, exe)
		os.WriteFile(filepath.Join(dir, file), []byte(script), 0o755)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := manager.New(manager.Config{Sources: []manager.Source{manager.Dirs(dir)}, Launch: host.Command{Cookie: cookie}})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		fmt.Println(err)
		return
	}
	majors := manager.Majors[greeter]{
		2: func(c *manager.Conn, _ manager.Info) (greeter, error) {
			return v2Greeter{objectstorev2.NewObjectStoreClient(c)}, nil
		},
		1: func(c *manager.Conn, _ manager.Info) (greeter, error) {
			return v1Greeter{objectstorev1.NewObjectStoreClient(c)}, nil
		},
	}
	for _, name := range []string{"example.com/new", "example.com/old"} {
		g, err := manager.Dispense(ctx, m, "objectstore", name, majors)
		if err != nil {
			fmt.Println(err)
			return
		}
		has, err := g.Has(ctx, "hello")
		fmt.Printf("%s: %T, has hello: %v, error: %v\n", name, g, has, err)
	}
	// Output:
	// example.com/new: manager_test.v2Greeter, has hello: false, error: <nil>
	// example.com/old: manager_test.v1Greeter, has hello: false, error: <nil>
}

// allowList is a Source of one's own: the plugins of another source whose
// file names are on a list. It connects as the source it wraps does. (The
// wrapped source describes every binary first; to launch none of the
// others, list the allowed paths and use Files.)
type allowList struct {
	manager.Source
	names []string
}

func (a allowList) Find(ctx context.Context, m *manager.Manager) ([]manager.Binary, error) {
	bins, err := a.Source.Find(ctx, m)
	return slices.DeleteFunc(bins, func(b manager.Binary) bool {
		return !slices.Contains(a.names, filepath.Base(b.Path))
	}), err
}

// ExampleSource finds plugins through a Source of one's own that keeps
// only the allowed binaries of a directory.
func ExampleSource() {
	dir, _ := os.MkdirTemp("", "plugins")
	defer os.RemoveAll(dir)
	exe, _ := os.Executable()
	for file, mode := range map[string]string{"new": "example.com/new 1,2", "old": "example.com/old 1"} {
		script := fmt.Sprintf("#!/bin/sh\n%s='%s' GORACE=atexit_sleep_ms=0 exec '%s'\n", modeEnv, mode, exe)
		os.WriteFile(filepath.Join(dir, file), []byte(script), 0o755)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := manager.New(manager.Config{
		Sources: []manager.Source{allowList{manager.Dirs(dir), []string{"old"}}},
		Launch:  host.Command{Cookie: cookie},
	})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range m.Binaries() {
		fmt.Println(filepath.Base(b.Path), b.Origin, b.Err)
	}
	_, err := m.Lookup("objectstore", "example.com/new")
	fmt.Println(err != nil)
	// Output:
	// old dir <nil>
	// true
}
