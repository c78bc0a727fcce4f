package release

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestInstallDownloadsNothingBeforeTheSignatureVerifies: a registry holds
// back the signature of an unsigned release whose manifest claims a 10 GB
// binary, and streams that binary as fast as it is read. Install must
// refuse the release as unsigned without asking for a byte of the binary:
// only the index and manifests are read before the signature over the
// index verifies.
func TestInstallDownloadsNothingBeforeTheSignatureVerifies(t *testing.T) {
	parallel(t)
	fake := newFakeRelease(t, fakeDescription("2.1.0", 2), 10<<30, 0, 0)
	var blobGets atomic.Int64
	// The signature is held back until the binary is asked for, or 3 s.
	repo := hostileRegistry(t, Options{}, unsignedHugeRelease(fake, func(r *http.Request) {
		deadline := time.Now().Add(3 * time.Second)
		for blobGets.Load() == 0 && time.Now().Before(deadline) && r.Context().Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
	}, &blobGets))
	ctx := testCtx(t)
	rel, err := Fetch(ctx, repo, "2.1.0")
	if err != nil {
		t.Fatal(err)
	}
	_, pub := newKey(t)
	dir := testutil.TempDir(t)
	_, err = Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
	if !errors.Is(err, ErrUnsigned) {
		t.Fatalf("install: %v, want ErrUnsigned", err)
	}
	if n := blobGets.Load(); n != 0 {
		t.Errorf("the 10 GB binary of an unsigned release was asked for %d time(s) before the signature was checked", n)
	}
	assertOnly(t, dir)
}

// TestInstallRefusesADowngradeByRetagging: a registry serves the signed
// 1.3.0 release under the tag 9.0.0 (its signature covers the index, not
// the tag). Resolve picks 9.0.0 as the newest; install must refuse it as
// tampered, naming both versions, and install nothing.
func TestInstallRefusesADowngradeByRetagging(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "acme/objectstore", nil)
	key, pub := newKey(t)
	dir := releaseDir(t, pluginBinary(t, "memory")) // built before the test's deadline starts
	ctx := testCtx(t)
	old, err := Push(ctx, repo, Publication{Dir: dir, Version: "1.3.0", Key: key, Cookie: objectstore.Cookie})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.target.Tag(ctx, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: old.Digest, Size: int64(len(fetchIndex(t, repo, old)))}, "9.0.0"); err != nil {
		t.Fatal(err)
	}
	rel, err := Resolve(ctx, repo, Selection{Requirement: requirement(1)})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != "9.0.0" {
		t.Fatalf("resolved %s, want the re-tagged 9.0.0", rel.Version)
	}
	dir = testutil.TempDir(t)
	_, err = Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
	if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "9.0.0") || !strings.Contains(err.Error(), "1.3.0") {
		t.Fatalf("install of 1.3.0 tagged 9.0.0: %v, want ErrTampered naming both versions", err)
	}
	assertOnly(t, dir)
	if _, err := LockRelease(ctx, repo, rel, pub, "", nil, nil); !errors.Is(err, ErrTampered) {
		t.Fatalf("lock of 1.3.0 tagged 9.0.0: %v, want ErrTampered", err)
	}
}

// TestResolveBoundsTagListing: endless tag pagination, with full pages
// and with empty ones, ends at the bound on tags or on pages, with an
// error naming the registry, the bound and the setting that raises it.
func TestResolveBoundsTagListing(t *testing.T) {
	parallel(t)
	for _, c := range []struct {
		name, setting string
		perPage       int
	}{
		{"full pages", "MaxTags", 1000},
		{"empty pages", "MaxTagPages", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pages atomic.Int64
			repo := hostileRegistry(t, Options{}, endlessTags(c.perPage, &pages))
			_, err := Resolve(testCtx(t), repo, Selection{Requirement: requirement(1)})
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), repo.Source) || !strings.Contains(err.Error(), c.setting) {
				t.Fatalf("resolve against endless tag pages: %v, want ErrLimit naming %s and %s", err, repo.Source, c.setting)
			}
			if n := pages.Load(); n > DefaultMaxTagPages+1 {
				t.Errorf("%d pages read, more than the bound of %d", n, DefaultMaxTagPages)
			}
		})
	}
}

// TestResolveBoundsIndexBytes: 150 tags each serving a 3.9 MB index
// (under the bound on one index) end at the bound on the bytes of all
// indexes; an index over the bound on one is refused, naming it.
func TestResolveBoundsIndexBytes(t *testing.T) {
	parallel(t)
	fake := newFakeRelease(t, fakeDescription("2.1.0", 2), 1000, 3_900_000, 64)
	var served atomic.Int64
	handler := manyIndexes(fake, 150, &served)
	repo := hostileRegistry(t, Options{}, handler)
	_, err := Resolve(testCtx(t), repo, Selection{Requirement: requirement(2)})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), repo.Source) || !strings.Contains(err.Error(), "MaxMetadataBytes") {
		t.Fatalf("resolve against 150 indexes of 3.9 MB: %v, want ErrLimit naming %s and MaxMetadataBytes", err, repo.Source)
	}
	// Reads in flight when the bound is reached may finish.
	if n := served.Load(); n > DefaultMaxMetadataBytes+int64(listParallelism+1)*int64(len(fake.index)) {
		t.Errorf("%d bytes of indexes served, far more than the bound of %d", n, DefaultMaxMetadataBytes)
	}

	small := hostileRegistry(t, Options{MaxIndexBytes: 1 << 20}, handler)
	_, err = Fetch(testCtx(t), small, "1.0.0")
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "MaxIndexBytes") || !strings.Contains(err.Error(), small.Source) {
		t.Fatalf("fetch of a 3.9 MB index with MaxIndexBytes 1 MiB: %v, want ErrLimit naming %s and MaxIndexBytes", err, small.Source)
	}
}

// TestResolveBoundsTime: a registry that answers every tag page slowly
// and forever meets the bound on the time listing takes.
func TestResolveBoundsTime(t *testing.T) {
	parallel(t)
	var pages atomic.Int64
	slow := endlessTags(1, &pages)
	repo := hostileRegistry(t, Options{MetadataTimeout: time.Second, MaxTagPages: 1 << 30, MaxTags: 1 << 30}, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		slow(w, r)
	})
	_, err := Resolve(testCtx(t), repo, Selection{Requirement: requirement(1)})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), repo.Source) || !strings.Contains(err.Error(), "MetadataTimeout") {
		t.Fatalf("resolve against slow endless pages: %v, want ErrLimit naming %s and MetadataTimeout", err, repo.Source)
	}
}

// TestInstallLockFileIsNotFollowed: a symbolic link planted at the
// directory's .plugkit-install.lock, pointing to a file that does not
// exist, must not make install create that file.
func TestInstallLockFileIsNotFollowed(t *testing.T) {
	parallel(t)
	dir := testutil.TempDir(t)
	target := filepath.Join(testutil.TempDir(t), "created-through-the-link")
	if err := os.Symlink(target, filepath.Join(dir, lockFileName)); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	unlock, err := lockDir(testCtx(t), dir)
	if err == nil {
		unlock()
	}
	// Under Wine a link reads as a plain file to Lstat: the lock opens the
	// link itself, which still creates nothing through it (checked below).
	if (err == nil && !testutil.UnderWine()) || (err != nil && !strings.Contains(err.Error(), "symbolic link")) {
		t.Errorf("lock through a planted link: %v, want a refusal naming the link", err)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("locking %s created %s through the link", dir, target)
	}
}

// requirement is kind objectstore at majors.
func requirement(majors ...int) compat.Requirement {
	return compat.Requirement{Kind: objectstore.Kind, Majors: majors}
}

// TestParseLockRefusesNamesThatAreNotPlain: a hand-edited lock file may
// not name a binary with a directory, a hidden name, or control or
// bidirectional formatting characters.
func TestParseLockRefusesNamesThatAreNotPlain(t *testing.T) {
	parallel(t)
	for _, name := range []string{"../../x", "sub/fs", `..\x`, ".plugkit-install.lock", "fs\x1b[2J", "fs\u202egpj.exe", ".."} {
		text := "lock-version 1\nplugin r.example/fs\n\tversion 2.1.0\n\tindex sha256:" + hex64 + "\n\tbinary linux/amd64 " + name + " sha256:" + hex64 + "\n"
		_, err := ParseLock("plugkit.lock", []byte(text))
		if err == nil || !strings.Contains(err.Error(), "plugkit.lock:5: binary:") || !strings.Contains(err.Error(), "not a plain file name") {
			t.Errorf("binary named %q: got %v, want plugkit.lock:5 refusing a name that is not plain", name, err)
		}
	}
}

// signedDigest signs a made-up manifest digest in repo with key, as
// cosign would, and returns the digest.
func signedDigest(t testing.TB, repo *Repository, key crypto.Signer) digest.Digest {
	t.Helper()
	signer, err := signature.LoadSigner(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	d := digest.FromString(fmt.Sprintf("a release signed by a %T", key))
	if err := signWith(testCtx(t), repo, d, signer); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestKeyPolicy: a release signed with a weak key (RSA-1024) is refused
// even when the key is trusted, and so is an RSA-512 key, each with a
// message saying why (not "signed by another key"); ECDSA P-256 and
// P-384, Ed25519 and RSA-2048 are trusted. LoadPublicKeys refuses a weak
// key's file, naming it.
func TestKeyPolicy(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "acme/keys", nil)
	ctx := testCtx(t)
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	d := signedDigest(t, repo, rsa1024)
	for name, k := range map[string]crypto.PublicKey{
		"RSA-1024": rsa1024.Public(),
		"RSA-512":  &rsa.PublicKey{N: new(big.Int).Lsh(big.NewInt(1), 511).Add(new(big.Int).Lsh(big.NewInt(1), 511), big.NewInt(1)), E: 65537},
	} {
		err := Verify(ctx, repo, d, []crypto.PublicKey{k})
		if err == nil || errors.Is(err, ErrUntrustedKey) || !strings.Contains(err.Error(), "2048") || !strings.Contains(err.Error(), "weak") {
			t.Errorf("a release verified with a trusted %s key: %v, want a refusal of the weak key saying why", name, err)
		}
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	rsa2048, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p256, _ := newKey(t)
	for name, k := range map[string]crypto.Signer{"P-256": p256, "P-384": p384, "Ed25519": ed, "RSA-2048": rsa2048} {
		if err := Verify(ctx, repo, signedDigest(t, repo, k), []crypto.PublicKey{k.Public()}); err != nil {
			t.Errorf("a release signed with a trusted %s key: %v", name, err)
		}
	}

	der, err := x509.MarshalPKIXPublicKey(rsa1024.Public())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(testutil.TempDir(t), "weak.pub")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPublicKeys(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "1024 bits") {
		t.Errorf("LoadPublicKeys of an RSA-1024 key: %v, want a refusal naming the file and the key's size", err)
	}
}

// TestSignaturePayloadFetchedOnce: a signature manifest whose 50 layers
// all name one payload makes Verify fetch that payload once.
func TestSignaturePayloadFetchedOnce(t *testing.T) {
	parallel(t)
	var c counter
	repo := openRegistry(t, "acme/sigs", &c)
	ctx := testCtx(t)
	d := digest.FromString("a release")
	payload := []byte(`{"critical":{"identity":{"docker-reference":"x"},"image":{"docker-manifest-digest":"` + d.String() + `"},"type":"cosign container image signature"}}`)
	layer := ocispec.Descriptor{MediaType: MediaTypeSimpleSigning, Digest: digest.FromBytes(payload), Size: int64(len(payload)),
		Annotations: map[string]string{AnnotationSignature: "bm90IGEgc2lnbmF0dXJl"}}
	if err := pushBytes(ctx, repo, layer, payload); err != nil {
		t.Fatal(err)
	}
	if err := pushBytes(ctx, repo, ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data); err != nil {
		t.Fatal(err)
	}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, Config: ocispec.DescriptorEmptyJSON}
	for range 50 {
		m.Layers = append(m.Layers, layer)
	}
	pushTagged(t, repo, ocispec.MediaTypeImageManifest, m, signatureTag(d))
	before := c.blobGets.Load()
	_, pub := newKey(t)
	if err := Verify(ctx, repo, d, pub); !errors.Is(err, ErrUntrustedKey) {
		t.Fatalf("verify: %v, want ErrUntrustedKey", err)
	}
	if n := c.blobGets.Load() - before; n != 1 {
		t.Errorf("the payload named by 50 layers was fetched %d times, want once", n)
	}
}
