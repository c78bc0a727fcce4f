package release

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// TestLoadPrivateKeyReadsCosignsEncryptedKey loads a key pair in the
// format of cosign generate-key-pair, made by the sigstore library cosign
// writes it with ("ENCRYPTED SIGSTORE PRIVATE KEY"): with
// COSIGN_PASSWORD set it is the key; without it, or with a wrong one, the
// error names the format and the variable.
func TestLoadPrivateKeyReadsCosignsEncryptedKey(t *testing.T) {
	dir := testutil.TempDir(t)
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte("s3cret")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(priv), "ENCRYPTED SIGSTORE PRIVATE KEY") {
		t.Fatalf("not cosign's format:\n%s", priv)
	}
	keyPath := filepath.Join(dir, "cosign.key")
	if err := os.WriteFile(keyPath, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := cryptoutils.UnmarshalPEMToPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}

	t.Setenv("COSIGN_PASSWORD", "s3cret")
	k, err := LoadPrivateKey(keyPath)
	if err != nil {
		t.Fatalf("LoadPrivateKey of cosign's key: %v", err)
	}
	if !k.(*ecdsa.PrivateKey).PublicKey.Equal(want) {
		t.Fatal("the key loaded is not cosign.pub's")
	}

	t.Setenv("COSIGN_PASSWORD", "wrong")
	_, err = LoadPrivateKey(keyPath)
	if err == nil || !strings.Contains(err.Error(), "COSIGN_PASSWORD") || !strings.Contains(err.Error(), "does not decrypt") {
		t.Fatalf("with a wrong password got %v, want an error saying COSIGN_PASSWORD does not decrypt it", err)
	}

	os.Unsetenv("COSIGN_PASSWORD") // t.Setenv restores it at the end
	_, err = LoadPrivateKey(keyPath)
	if err == nil || !strings.Contains(err.Error(), "ENCRYPTED SIGSTORE PRIVATE KEY") || !strings.Contains(err.Error(), "set COSIGN_PASSWORD") {
		t.Fatalf("without a password got %v, want an error naming the format and COSIGN_PASSWORD", err)
	}
}
