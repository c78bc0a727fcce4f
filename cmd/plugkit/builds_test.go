package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// builds holds the programs the tests build, each once per test binary
// (the memory plugin that a dozen tests launch, the test plugins, the CLI
// itself), in a directory TestMain removes: a build costs a go command
// (about a second of CPU even when its link is cached), a hard link none.
var builds struct {
	mu   sync.Mutex
	dir  string
	pkgs map[string]*build
}

// build is one package's program, built once.
type build struct {
	once sync.Once
	path string
	err  error
}

// goBuild puts the program of the main package pkg (an import path, or a
// path relative to this directory) at dir/name and returns its path: a
// hard link to the build the tests share (a copy on Windows and where the
// file system has no links), so that each caller has a file of its own to name and a
// directory of its own to list.
func goBuild(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	shared, err := sharedBuild(pkg)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name+filepath.Ext(shared))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := testutil.PlaceBinary(shared, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sharedBuild builds pkg the first time it is asked for and returns the
// path of that build.
func sharedBuild(pkg string) (string, error) {
	builds.mu.Lock()
	if builds.pkgs == nil {
		builds.pkgs = map[string]*build{}
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "plugkit-cli-builds-") // removed by TestMain
		if err != nil {
			builds.mu.Unlock()
			return "", err
		}
		builds.dir = dir
	}
	b := builds.pkgs[pkg]
	if b == nil {
		b = &build{path: filepath.Join(builds.dir, strconv.Itoa(len(builds.pkgs)), "bin")}
		builds.pkgs[pkg] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		b.path, b.err = testutil.BuildBinary(ctx, b.path, pkg)
	})
	return b.path, b.err
}
