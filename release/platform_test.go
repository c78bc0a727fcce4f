package release

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/testutil"
)

// pushPlatforms pushes, unsigned and with a made-up Describe answer of
// major 1, release version holding a small stand-in file for each
// platform (a module's starts with "\0asm"). Nothing runs.
func pushPlatforms(t testing.TB, repo *Repository, version string, platforms ...string) {
	t.Helper()
	dir := testutil.TempDir(t)
	var bins []platformBinary
	for _, p := range platforms {
		name, data := "objectstore-fake", "binary for "+p+" "+version
		if p == PlatformWasm {
			name, data = "objectstore-fake.wasm", "\x00asm"+data
		}
		path := filepath.Join(dir, strings.ReplaceAll(p, "/", "_"), name)
		writeFile(t, path, []byte(data), 0o755)
		bins = append(bins, platformBinary{platform: p, path: path})
	}
	if _, err := pushRelease(testCtx(t), repo, version, bins, fakeDescription(version, 1), false); err != nil {
		t.Fatalf("push %s: %v", version, err)
	}
}

// TestResolveSkipsReleasesWithoutABuildHere: with Selection.Platforms set
// to what Install would install (Target.Wasm.Platforms()), Resolve passes
// over newer releases with no build for this machine (3.0.0: another
// platform only) or none Target.Wasm allows (2.0.0: only a module, under
// WasmNever), and picks the newest installable one; without Platforms
// (plugkit lock) it picks the newest as before. When every fitting
// release is skipped, the NoFitError names each with what it has, and
// says to allow the module when one of them has it. No guest runs.
func TestResolveSkipsReleasesWithoutABuildHere(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/platforms", nil)
	const other = "plan9/mips"
	if here == other {
		t.Skip("the test's other platform is this machine's")
	}
	pushPlatforms(t, repo, "1.0.0", here, other)
	pushPlatforms(t, repo, "2.0.0", PlatformWasm)
	pushPlatforms(t, repo, "3.0.0", other)
	req := compat.Requirement{Kind: objectstore.Kind, Majors: []int{1}}
	for _, tc := range []struct {
		platforms  []string
		constraint string
		want       string // a version, or parts of the error separated by "|"
	}{
		{nil, "", "3.0.0"},
		{WasmFallback.Platforms(), "", "2.0.0"},
		{WasmPrefer.Platforms(), "", "2.0.0"},
		{WasmOnly.Platforms(), "", "2.0.0"},
		{WasmNever.Platforms(), "", "1.0.0"},
		{WasmFallback.Platforms(), "~> 3.0", "has a build for " + here + " or " + PlatformWasm + ". Skipped: v3.0.0 (it has " + other + ")|Ask the publisher for a build for " + here + " or " + PlatformWasm + ".\n"},
		{WasmNever.Platforms(), ">= 2.0", "and the constraint \">= 2.0\" has a build for " + here + ". Skipped: v3.0.0 (it has " + other + "); v2.0.0 (it has " + PlatformWasm + ")|--wasm fallback"},
		{WasmOnly.Platforms(), "< 2.0", "Skipped: v1.0.0 (it has " + strings.Join(slices.Sorted(slices.Values([]string{here, other})), ", ") + ")|--wasm fallback"},
	} {
		rel, err := Resolve(testCtx(t), repo, Selection{Requirement: req, Constraint: tc.constraint, Platforms: tc.platforms})
		if !strings.Contains(tc.want, " ") {
			if err != nil || rel.Version != tc.want {
				t.Errorf("platforms %v, constraint %q: got %q, %v; want %s", tc.platforms, tc.constraint, rel.Version, err, tc.want)
			}
			continue
		}
		var nf *NoFitError
		if !errors.As(err, &nf) || len(nf.Skipped) == 0 {
			t.Errorf("platforms %v, constraint %q: got %q, %v; want a NoFitError naming the releases skipped", tc.platforms, tc.constraint, rel.Version, err)
			continue
		}
		for _, part := range strings.Split(tc.want, "|") {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("platforms %v, constraint %q: the error %q does not say %q", tc.platforms, tc.constraint, err, part)
			}
		}
	}
}

// TestPushNamesThePlatformDirectories: a release directory with no
// binary for this machine and no module is refused, naming the
// directories either belongs in for this machine's platform. No guest
// runs.
func TestPushNamesThePlatformDirectories(t *testing.T) {
	parallel(t)
	dir := testutil.TempDir(t)
	writeFile(t, filepath.Join(dir, platformDir(otherPlatform()), "objectstore-fake"), []byte("a binary for another machine"), 0o755)
	key, _ := newKey(t)
	_, err := Push(testCtx(t), &Repository{Source: "registry.example/plugins/fake"}, Publication{Dir: dir, Version: "1.0.0", Key: key, Cookie: objectstore.Cookie})
	for _, want := range []string{dir + "/" + platformDir(hostPlatform) + "/NAME", dir + "/wasip1_wasm/NAME.wasm"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error naming %s", err, want)
		}
	}
}
