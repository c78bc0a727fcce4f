package protocheck

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/protocheck/load"
)

// loadWithin runs Load and fails t when it does not return within a
// minute (a FIFO or an endless file used to hang it).
func loadWithin(t *testing.T, input string, opts load.LoadOptions) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := load.Load(context.Background(), input, opts)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("Load(%s) did not return within a minute", input)
		return nil
	}
}

// TestHostileInputs: plugkit proto reads only regular files inside its
// input roots, with a size cap, and says which file it refused.
func TestHostileInputs(t *testing.T) {
	const ok = "syntax = \"proto3\";\npackage p;\nmessage M {}\n"
	setup := func(t *testing.T) string {
		dir := filepath.Join(testutil.TempDir(t), "in")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "a.proto"), []byte(ok), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	outside := filepath.Join(testutil.TempDir(t), "secret.proto")
	if err := os.WriteFile(outside, []byte("syntax = \"proto3\";\npackage secret;\nmessage Key { string value = 1; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("fifo", func(t *testing.T) {
		dir := setup(t)
		mkfifo(t, filepath.Join(dir, "x.proto"))
		if err := loadWithin(t, dir, load.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "x.proto is not a regular file") {
			t.Errorf("a FIFO: %v", err)
		}
	})
	t.Run("link to /dev/zero", func(t *testing.T) {
		dir := setup(t)
		symlinkOrSkip(t, "/dev/zero", filepath.Join(dir, "z.proto"))
		if err := loadWithin(t, dir, load.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "outside the input") {
			t.Errorf("a link to /dev/zero: %v", err)
		}
	})
	t.Run("link outside", func(t *testing.T) {
		dir := setup(t)
		symlinkOrSkip(t, outside, filepath.Join(dir, "s.proto"))
		if err := loadWithin(t, dir, load.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "outside the input") {
			t.Errorf("a link outside the input: %v", err)
		}
	})
	t.Run("link inside", func(t *testing.T) {
		dir := setup(t)
		if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "sub", "b.proto"), []byte("syntax = \"proto3\";\npackage q;\nmessage N {}\n"), 0o644)
		if err := os.Symlink(filepath.Join(dir, "sub", "b.proto"), filepath.Join(dir, "c.proto")); err != nil {
			t.Fatal(err)
		}
		if err := loadWithin(t, dir, load.LoadOptions{}); err != nil && strings.Contains(err.Error(), "refused") {
			t.Errorf("a link inside the input was refused: %v", err)
		}
	})
	t.Run("import outside -I", func(t *testing.T) {
		dir := setup(t)
		inc := filepath.Join(filepath.Dir(outside), "inc")
		os.MkdirAll(inc, 0o755)
		rel, _ := filepath.Rel(inc, outside)
		os.WriteFile(filepath.Join(dir, "a.proto"), []byte("syntax = \"proto3\";\npackage p;\nimport \""+filepath.ToSlash(rel)+"\";\nmessage M { secret.Key k = 1; }\n"), 0o644)
		err := loadWithin(t, dir, load.LoadOptions{ImportPaths: []string{inc}})
		if err == nil || !strings.Contains(err.Error(), "without ..") {
			t.Errorf("an import climbing out of -I: %v", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		dir := setup(t)
		f, err := os.Create(filepath.Join(dir, "huge.proto"))
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(load.MaxFileSize + 1)
		f.Close()
		if err := loadWithin(t, dir, load.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "over the") {
			t.Errorf("a file over the cap: %v", err)
		}
	})
}

// symlinkOrSkip makes link point to target, or skips the test under Wine,
// whose symbolic links its Windows programs cannot tell from files.
func symlinkOrSkip(t *testing.T, target, link string) {
	t.Helper()
	if testutil.UnderWine() {
		t.Skip("Wine makes symbolic links its Windows programs cannot tell from files")
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
