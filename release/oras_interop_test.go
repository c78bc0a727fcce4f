//go:build oras

package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestOrasInterop checks, with an oras binary named by $ORAS (built with
// the oras tag only: see docs/distribution.md), that `oras discover`
// lists the signature bundle of a release plugkit pushed, that `oras
// pull` of the whole release (no --platform) writes its directory, and
// that a release copied with `oras cp -r` (without its .sig tag)
// verifies at the copy.
func TestOrasInterop(t *testing.T) {
	parallel(t)
	orasBin := os.Getenv("ORAS")
	if orasBin == "" {
		t.Fatal("set ORAS to an oras binary (go install oras.land/oras/cmd/oras@v1.3.6)")
	}
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	dir := testutil.TempDir(t)
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, orasBin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("oras %v: %v\n%s", args, err, out)
		}
		t.Logf("oras %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	rel, _, pub := pushFS(t, repo, "darwin/arm64", "windows/amd64")
	ref := repo.Source + ":" + rel.Version

	if out := cli("discover", "--plain-http", "--format", "tree", ref); !strings.Contains(out, MediaTypeBundle) {
		t.Errorf("oras discover lists no %s referrer", MediaTypeBundle)
	}
	cli("pull", "--plain-http", "-o", "pulled", ref)
	name := filepath.Base(pluginBinary(t, "fs"))
	for _, p := range []string{here, "darwin/arm64", "windows/amd64"} {
		if _, err := os.Stat(filepath.Join(dir, "pulled", platformDir(p), name)); err != nil {
			t.Errorf("oras pull wrote no %s binary: %v", p, err)
		}
	}
	dst, err := Open(strings.Replace(repo.Source, "plugins/fs", "copies/fs", 1), Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	cli("cp", "-r", "--from-plain-http", "--to-plain-http", ref, dst.Source+":"+rel.Version)
	if err := Verify(ctx, dst, rel.Digest, pub); err != nil {
		t.Errorf("the copy made by oras cp -r: %v", err)
	}
}
