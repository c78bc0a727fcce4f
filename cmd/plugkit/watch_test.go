package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// buildFSRelease builds the example fs plugin at release version into
// dir/name, as the demo's goBuildRelease does but linked once into the
// Go build cache (testutil.BuildBinaryWith), so that a second run copies
// it.
func buildFSRelease(t *testing.T, dir, name, version string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := testutil.BuildBinaryWith(ctx, filepath.Join(dir, name), examplePluginPkg+"fs", "-ldflags=-X main.version="+version)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPluginsWatchUpgrades: plugins watch keeps the plugin --use names
// running, takes a release installed into the directory over by itself,
// and says which release serves and which drains, before and after.
func TestPluginsWatchUpgrades(t *testing.T) {
	t.Parallel()
	if testutil.UnderWine() {
		t.Skip("it builds plugins with the Go tool, which does not run under Wine")
	}
	testutil.NotOnWindows(t, "it replaces a plugin binary while it runs, which Windows forbids")
	dir, staging := testutil.TempDir(t), testutil.TempDir(t)
	buildFSRelease(t, dir, "fs", "2.1.0")
	next := buildFSRelease(t, staging, "fs", "2.2.0")
	var stdout, stderr testutil.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"plugins", "watch", "--dir", dir, "--cookie", exampleCookie, "--use", "objectstore/example.com/fs",
			"--upgrades", "1", "--probation", "500ms"}, &stdout, &stderr)
	}()
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(stdout.String(), "watching ") {
		select {
		case code := <-done:
			t.Fatalf("plugins watch exited %d before watching: %s\n%s", code, stderr.String(), stdout.String())
		case <-deadline:
			t.Fatalf("plugins watch did not begin watching within 2 minutes:\n%s", stdout.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := os.Rename(next, filepath.Join(dir, "fs")); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("plugins watch exited %d: %s\n%s", code, stderr.String(), stdout.String())
		}
	case <-deadline:
		t.Fatalf("plugins watch did not end after one upgrade within 2 minutes:\n%s", stdout.String())
	}
	out := stdout.String()
	for _, want := range []string{
		`(?m)^serving objectstore example.com/fs: v2\.1\.0 \(pid (\d+)\); draining none$`,
		// At the switch: the old release drains, kept to roll back to.
		`(?m)^serving objectstore example.com/fs: v2\.2\.0 \(pid \d+\) \(on probation for \S+\); draining v2\.1\.0 \(pid \d+\) with \d+ calls in flight$`,
		`(?m)^upgrade objectstore example.com/fs: v2\.1\.0 \(pid \d+\) -> v2\.2\.0 \(pid \d+\): completed in \S+$`,
		`(?m)^serving objectstore example.com/fs: v2\.2\.0 \(pid (\d+)\); draining none$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("plugins watch's output lacks a line like %s:\n%s", want, out)
		}
	}
}
