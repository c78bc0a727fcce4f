//go:build unix

package manager_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	f := &manager.Finder{Launch: host.Command{Cookie: cookie}}
	m := manager.New(manager.Config{Sources: []manager.Source{f.Dirs(dir)}})
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

// listFile is a Source of one's own: the plugin binaries a text file
// names, one path a line, relative to the file's directory. It lists
// them, and leaves the rest to a Finder: hashing, pins, the describe
// cache and the describe-line fast path, and starting them for use.
type listFile struct {
	path   string
	finder *manager.Finder
}

func (l listFile) Find(ctx context.Context) ([]manager.Entry, error) {
	data, err := os.ReadFile(l.path)
	if err != nil {
		return nil, fmt.Errorf("plugin list: %w", err)
	}
	var paths []string
	for _, line := range strings.Fields(string(data)) {
		if !filepath.IsAbs(line) {
			line = filepath.Join(filepath.Dir(l.path), line)
		}
		paths = append(paths, line)
	}
	return l.finder.Describe(ctx, paths), nil
}

func (l listFile) Connect(ctx context.Context, e manager.Entry) (*host.Client, error) {
	return l.finder.Start(ctx, e)
}

// ExampleSource finds plugins through a Source of one's own, listFile:
// the plugins a file lists, described and cached by a Finder. A second
// Manager, with a Finder of its own on the same cache file, launches
// nothing to find them.
func ExampleSource() {
	dir, _ := os.MkdirTemp("", "plugins")
	defer os.RemoveAll(dir)
	exe, _ := os.Executable()
	for file, mode := range map[string]string{"new": "example.com/new 1,2", "old": "example.com/old 1"} {
		script := fmt.Sprintf("#!/bin/sh\n%s='%s' GORACE=atexit_sleep_ms=0 exec '%s'\n", modeEnv, mode, exe)
		os.WriteFile(filepath.Join(dir, file), []byte(script), 0o755)
	}
	list := filepath.Join(dir, "plugins.txt")
	os.WriteFile(list, []byte("old\n"), 0o644)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, run := range []string{"cold", "warm"} {
		finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: filepath.Join(dir, "cache.json")}
		m := manager.New(manager.Config{Sources: []manager.Source{listFile{list, finder}}})
		if err := m.Discover(ctx); err != nil {
			fmt.Println(err)
			return
		}
		for _, e := range m.Entries() {
			fmt.Println(run, filepath.Base(e.Path), e.Origin, e.Cached, e.Err, finder.Launches(), "launches")
		}
		m.Close()
	}
	// Output:
	// cold old dir false <nil> 1 launches
	// warm old dir true <nil> 0 launches
}
