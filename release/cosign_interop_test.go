//go:build cosign

package release

import (
	"context"
	"crypto/ecdsa"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// TestCosignInterop checks, with a cosign binary named by $COSIGN (built
// with the cosign tag only: see docs/distribution.md), that `cosign
// verify --key --insecure-ignore-tlog` accepts plugkit's signature of a
// release, and that Verify accepts a signature made by `cosign sign --key
// --tlog-upload=false` (and COSIGN_SIGN_FLAGS: cosign v3 offline needs
// --use-signing-config=false) with a key cosign imported.
func TestCosignInterop(t *testing.T) {
	parallel(t)
	repo, ctx, dir, cli := cosignRun(t)
	writePEM := func(name string, der func() ([]byte, error)) {
		t.Helper()
		raw, err := der()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	rel, _, pub := pushFS(t, repo)
	writePEM("plugkit.pub", func() ([]byte, error) { return cryptoutils.MarshalPublicKeyToPEM(pub[0]) })
	cli(append(append([]string{"verify", "--key", "plugkit.pub", "--insecure-ignore-tlog", "--allow-insecure-registry", "--allow-http-registry"}, strings.Fields(os.Getenv("COSIGN_VERIFY_FLAGS"))...), repo.Source+":2.1.0")...)

	key2, pub2 := newKey(t)
	writePEM("cosign.pem", func() ([]byte, error) { return cryptoutils.MarshalPrivateKeyToPEM(key2.(*ecdsa.PrivateKey)) })
	cli("import-key-pair", "--key", "cosign.pem", "--output-key-prefix", "imported")
	bins, err := scanDir(releaseDir(t, pluginBinary(t, "fs"), "darwin/arm64"))
	if err != nil {
		t.Fatal(err)
	}
	rel2, err := pushRelease(ctx, repo, "2.1.1", bins, rel.Description, false)
	if err != nil {
		t.Fatal(err)
	}
	cli(append(append([]string{"sign", "--key", "imported.key", "--tlog-upload=false"}, strings.Fields(os.Getenv("COSIGN_SIGN_FLAGS"))...), "--allow-insecure-registry", "--allow-http-registry", repo.Source+"@"+rel2.Digest.String())...)
	if err := Verify(ctx, repo, rel2.Digest, pub2); err != nil {
		t.Fatalf("Verify refused cosign's signature: %v", err)
	}
}

// TestCosignKeyFileAndBundles checks, with the cosign binary named by
// $COSIGN (v2.6.5 or v3.1.3), that release push signs with the key
// `cosign generate-key-pair` makes (its password in COSIGN_PASSWORD),
// that `cosign verify --key cosign.pub` accepts that release, and that
// Verify accepts what `cosign sign --key` stores by default (cosign v3: a
// sigstore bundle referrer; v2: the .sig tag), saying which it found.
// With COSIGN_VERIFY_BUNDLE set (to cosign verify's extra flags, or
// "--"), cosign verify also accepts the release with its .sig tag
// deleted: through push's bundle referrer alone. COSIGN_SIGN_FLAGS are
// cosign sign's extra flags (cosign v3 offline: --use-signing-config=false),
// COSIGN_VERIFY_FLAGS cosign verify's (cosign v2 offline, which takes the
// bundle referrer and then wants a trusted root: --new-bundle-format
// --trusted-root trusted_root.json, which the test writes).
func TestCosignKeyFileAndBundles(t *testing.T) {
	repo, ctx, dir, cli := cosignRun(t)
	cli("generate-key-pair")
	t.Setenv("COSIGN_PASSWORD", "interop")
	key, err := LoadPrivateKey(filepath.Join(dir, "cosign.key"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := LoadPublicKeys(filepath.Join(dir, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := Push(ctx, repo, Publication{Dir: releaseDir(t, pluginBinary(t, "fs")), Version: "2.1.0", Key: key, Cookie: objectstore.Cookie})
	if err != nil {
		t.Fatal(err)
	}
	registryFlags := []string{"--allow-insecure-registry", "--allow-http-registry"}
	verify := append(append([]string{"verify", "--key", "cosign.pub", "--insecure-ignore-tlog"}, registryFlags...), strings.Fields(os.Getenv("COSIGN_VERIFY_FLAGS"))...)
	cli(append(verify, repo.Source+":2.1.0")...)
	if os.Getenv("COSIGN_VERIFY_BUNDLE") != "" { // cosign v3, or v2 with --new-bundle-format
		dropTagSignature(t, repo, rel.Digest)
		cli(append(append(verify, strings.Fields(os.Getenv("COSIGN_VERIFY_BUNDLE"))...), repo.Source+":2.1.0")...)
	}

	bins, err := scanDir(releaseDir(t, pluginBinary(t, "fs"), "darwin/arm64"))
	if err != nil {
		t.Fatal(err)
	}
	rel2, err := pushRelease(ctx, repo, "2.1.1", bins, rel.Description, false)
	if err != nil {
		t.Fatal(err)
	}
	signFlags := strings.Fields(os.Getenv("COSIGN_SIGN_FLAGS"))
	cli(append(append([]string{"sign", "--key", "cosign.key", "--tlog-upload=false"}, signFlags...), append(registryFlags, repo.Source+"@"+rel2.Digest.String())...)...)
	c := &sigCheck{repo: repo, d: rel2.Digest}
	m, err := c.tagManifest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := c.referrers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cosign sign stored: a .sig tag: %v; signature referrers: %d %v", m != nil, len(refs), refs)
	if err := Verify(ctx, repo, rel2.Digest, pub); err != nil {
		t.Fatalf("Verify refused cosign's signature: %v", err)
	}
	if m != nil {
		dropTagSignature(t, repo, rel2.Digest)
		if err := Verify(ctx, repo, rel2.Digest, pub); err != nil && len(refs) > 0 {
			t.Fatalf("Verify refused cosign's signature referrer: %v", err)
		}
	}
}

// writeTrustedRoot writes, into dir, trusted_root.json: a sigstore trusted
// root of no authorities, for cosign verify --trusted-root offline (a key
// needs none).
func writeTrustedRoot(t testing.TB, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "trusted_root.json"), []byte(`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cosignRun opens a registry and a directory (with trusted_root.json)
// for the cosign binary $COSIGN, and returns a function that runs it
// there, with COSIGN_PASSWORD set, failing the test when it fails.
func cosignRun(t *testing.T) (*Repository, context.Context, string, func(args ...string)) {
	t.Helper()
	cosign := os.Getenv("COSIGN")
	if cosign == "" {
		t.Fatal("set COSIGN to a cosign binary (go install github.com/sigstore/cosign/v3/cmd/cosign@v3.1.3, or .../cosign/v2/cmd/cosign@v2.6.5)")
	}
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	dir := testutil.TempDir(t)
	writeTrustedRoot(t, dir)
	return repo, ctx, dir, func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, cosign, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=interop", "COSIGN_YES=true")
		out, err := cmd.CombinedOutput()
		t.Logf("cosign %v:\n%s", args, out)
		if err != nil {
			t.Fatalf("cosign %v: %v", args, err)
		}
	}
}
