package release

import (
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestPublishedExamples publishes the example plugins as three releases
// of one repository (majors 1; 2 and 1; 3), once, for the checks that
// only read them: each publication describes three plugins and uploads
// their 60 MB, which three tests of their own did three times.
func TestPublishedExamples(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/objectstore", nil)
	key, pub := newKey(t)
	publishExamples(t, repo, key)
	t.Run("ResolveChoosesByMajorsAndConstraint", func(t *testing.T) { resolveChoosesByMajorsAndConstraint(t, repo) })
	t.Run("InstallWritesTheVerifiedBinary", func(t *testing.T) { installWritesTheVerifiedBinary(t, repo, pub) })
	t.Run("ConcurrentInstallsIntoOneDirectory", func(t *testing.T) { concurrentInstallsIntoOneDirectory(t, repo, pub) })
}

// resolveChoosesByMajorsAndConstraint checks Resolve picks, among the
// published examples, the newest release meeting the majors and the
// constraint, and that a no-fit error names the release to select and its
// constraint.
func resolveChoosesByMajorsAndConstraint(t *testing.T, repo *Repository) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		majors     []int
		constraint string
		want       string
	}{
		{[]int{1}, "", "2.1.0"},
		{[]int{1}, "~> 1.0", "1.3.0"},
		{[]int{1, 2}, "< 2.0.0", "1.3.0"},
		{[]int{2}, "", "2.1.0"},
		{[]int{3}, "", "3.0.0"},
		{[]int{1, 3}, "", "3.0.0"},
	} {
		rel, err := Resolve(ctx, repo, Selection{Requirement: compat.Requirement{Kind: objectstore.Kind, Majors: tc.majors}, Constraint: tc.constraint})
		if err != nil {
			t.Fatalf("majors %v %q: %v", tc.majors, tc.constraint, err)
		}
		if rel.Version != tc.want {
			t.Errorf("majors %v %q: got %s, want %s", tc.majors, tc.constraint, rel.Version, tc.want)
		}
		if rel.Description.GetPluginVersion() != tc.want {
			t.Errorf("release %s carries the Describe answer of %q", rel.Version, rel.Description.GetPluginVersion())
		}
	}

	_, err := Resolve(ctx, repo, Selection{Requirement: compat.Requirement{Kind: objectstore.Kind, Majors: []int{2}}, Constraint: "~> 1.0"})
	var nf *NoFitError
	if !errors.As(err, &nf) {
		t.Fatalf("majors 2 with ~> 1.0: got %v, want a NoFitError", err)
	}
	t.Logf("%s", err)
	for _, want := range []string{`meets both the constraint "~> 1.0" and objectstore major 2`, `v1.3.0 is not compatible`, "v2.1.0 is the earliest compatible version", `version = "~> 2.1.0"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no-fit message lacks %q:\n%s", want, err)
		}
	}
	_, err = Resolve(ctx, repo, Selection{Requirement: compat.Requirement{Kind: objectstore.Kind, Majors: []int{1}}, Constraint: ">= 3.0"})
	t.Logf("%s", err)
	for _, want := range []string{`v3.0.0 is not compatible`, "v2.1.0 is the latest compatible version", `version = "~> 2.1.0"`} {
		if !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("no-fit message lacks %q:\n%s", want, err)
		}
	}
	_, err = Resolve(ctx, repo, Selection{Requirement: compat.Requirement{Kind: objectstore.Kind, Majors: []int{4}}})
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "No release of") || !strings.Contains(err.Error(), "v3.0.0 speaks objectstore 3.0") {
		t.Fatalf("majors 4: got %v, want the no-compatible-release message listing what each speaks", err)
	}
}

// installWritesTheVerifiedBinary installs a resolved release of the
// published examples and checks the file is the published binary,
// executable, and that nothing else is left in the directory.
func installWritesTheVerifiedBinary(t *testing.T, repo *Repository, pub []crypto.PublicKey) {
	ctx := testCtx(t)
	rel, err := Resolve(ctx, repo, Selection{Requirement: compat.Requirement{Kind: objectstore.Kind, Majors: []int{2}}, Constraint: "~> 2.0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rel.Platforms, ","); got != strings.Join(sortedPlatforms(here, "darwin/arm64"), ",") {
		t.Errorf("platforms %s", got)
	}
	dir := filepath.Join(testutil.TempDir(t), "plugins")
	inst, err := Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
	if err != nil {
		t.Fatal(err)
	}
	want := fileSHA(t, pluginBinary(t, "fs"))
	if got := fileSHA(t, inst.Path); got != want || inst.SHA256 != want {
		t.Errorf("installed sha256 %s (reported %s), published %s", got, inst.SHA256, want)
	}
	fi, err := os.Stat(inst.Path)
	if err != nil || (fi.Mode().Perm()&0o111 == 0 && osdep.ExecBits) {
		t.Errorf("installed binary: %v, mode %v", err, fi.Mode())
	}
	assertOnly(t, dir, filepath.Base(inst.Path))
}

func sortedPlatforms(ps ...string) []string {
	if ps[0] > ps[1] {
		ps[0], ps[1] = ps[1], ps[0]
	}
	return ps
}

func fileSHA(t testing.TB, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(raw)
	return hex.EncodeToString(s[:])
}

// assertOnly fails unless dir holds exactly the files named (and the
// install lock file).
func assertOnly(t testing.TB, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		if e.Name() != lockFileName {
			got = append(got, e.Name())
		}
	}
	for i := range names {
		if !strings.HasSuffix(names[i], exe()) {
			names[i] += exe() // the installed binaries are named .exe on Windows
		}
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}

// TestPushRefusesToChangeAPublishedVersion pushes a release twice (the
// same content: accepted, as a retried CI job does) and then other
// content under the same version: refused, since lock files rely on a
// version's content never changing. A binary whose own version differs
// from the tag is refused too.
func TestPushRefusesToChangeAPublishedVersion(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	key, _ := newKey(t)
	dist := releaseDir(t, pluginBinary(t, "fs"))
	first, err := Push(ctx, repo, Publication{Dir: dist, Version: "2.1.0", Key: key, Cookie: objectstore.Cookie})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Push(ctx, repo, Publication{Dir: dist, Version: "2.1.0", Key: key, Cookie: objectstore.Cookie})
	if err != nil || again.Digest != first.Digest {
		t.Fatalf("pushing the same release again: %v (digest %s, first %s)", err, again.Digest, first.Digest)
	}
	_, err = Push(ctx, repo, Publication{Dir: releaseDir(t, pluginBinary(t, "fs"), "darwin/arm64"), Version: "2.1.0", Key: key, Cookie: objectstore.Cookie})
	if err == nil || !strings.Contains(err.Error(), "already published with other content") {
		t.Fatalf("changing a published version: got %v", err)
	}
	_, err = Push(ctx, repo, Publication{Dir: dist, Version: "2.1.1", Key: key, Cookie: objectstore.Cookie})
	if err == nil || !strings.Contains(err.Error(), `the binary says it is version "2.1.0"`) {
		t.Fatalf("a tag that is not the binary's version: got %v", err)
	}
	rel, err := Fetch(ctx, repo, "2.1.0")
	if err != nil || rel.Digest != first.Digest {
		t.Fatalf("the published release changed: %v %s", err, rel.Digest)
	}
}
