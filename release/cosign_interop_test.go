//go:build cosign

package release

import (
	"crypto/ecdsa"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// TestCosignInterop checks, with a cosign binary named by $COSIGN (built
// with the cosign tag only: see docs/distribution.md), that `cosign
// verify --key --insecure-ignore-tlog` accepts plugkit's signature of a
// release, and that Verify accepts a signature made by `cosign sign --key
// --tlog-upload=false` with a key cosign imported.
func TestCosignInterop(t *testing.T) {
	cosign := os.Getenv("COSIGN")
	if cosign == "" {
		t.Fatal("set COSIGN to a cosign binary (go install github.com/sigstore/cosign/v2/cmd/cosign@v2.6.5)")
	}
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	dir := testutil.TempDir(t)
	cli := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, cosign, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=interop", "COSIGN_YES=true")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cosign %v: %v\n%s", args, err, out)
		}
	}
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

	rel, key, pub := pushFS(t, repo)
	writePEM("plugkit.pub", func() ([]byte, error) { return cryptoutils.MarshalPublicKeyToPEM(pub[0]) })
	cli("verify", "--key", "plugkit.pub", "--insecure-ignore-tlog", "--allow-insecure-registry", "--allow-http-registry", repo.Source+":2.1.0")

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
	cli("sign", "--key", "imported.key", "--tlog-upload=false", "--allow-insecure-registry", "--allow-http-registry", repo.Source+"@"+rel2.Digest.String())
	if err := Verify(ctx, repo, rel2.Digest, pub2); err != nil {
		t.Fatalf("Verify refused cosign's signature: %v", err)
	}
}
