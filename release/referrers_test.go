package release

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/registrytest"
)

// attach pushes raw as the one layer (layerType) of a manifest of
// artifactType whose subject is subject: a referrer, as cosign v3 and
// oras attach store one. It returns the referrer's descriptor.
func attach(t testing.TB, repo *Repository, subject ocispec.Descriptor, artifactType, layerType string, raw []byte, annotations map[string]string) ocispec.Descriptor {
	t.Helper()
	ctx := testCtx(t)
	l := ocispec.Descriptor{MediaType: layerType, Digest: digest.FromBytes(raw), Size: int64(len(raw)), Annotations: annotations}
	if err := pushBytes(ctx, repo, l, raw); err != nil {
		t.Fatal(err)
	}
	m, err := oras.PackManifest(ctx, repo.target, oras.PackManifestVersion1_1, artifactType, oras.PackManifestOptions{Subject: &subject, Layers: []ocispec.Descriptor{l}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// cosignBundle makes, with sigstore-go's signer and a key of its own
// (sign.EphemeralKeypair, as cosign v3 signs with sigstore-go), the
// sigstore bundle cosign v3 stores for `cosign sign --key`: a DSSE
// envelope of an in-toto statement of the cosign signing predicate whose
// subject is the digest named. It returns the bundle and the key.
func cosignBundle(t testing.TB, named digest.Digest) ([]byte, crypto.PublicKey) {
	t.Helper()
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": "registry.example/acme/fs", "digest": map[string]string{"sha256": named.Encoded()}}},
		"predicateType": "https://sigstore.dev/cosign/sign/v1",
		"predicate":     map[string]any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sign.Bundle(&sign.DSSEData{Data: st, PayloadType: "application/vnd.in-toto+json"}, kp, sign.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return raw, kp.GetPublicKey()
}

// indexOf returns the descriptor of a release's index.
func indexOf(t testing.TB, repo *Repository, rel Release) ocispec.Descriptor {
	t.Helper()
	d, err := repo.target.Resolve(testCtx(t), rel.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// dropTagSignature deletes the manifest under the release's .sig tag, so
// that only its referrers are left.
func dropTagSignature(t testing.TB, repo *Repository, d digest.Digest) {
	t.Helper()
	ctx := testCtx(t)
	sig, err := repo.target.Resolve(ctx, signatureTag(d))
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.target.(interface {
		Delete(context.Context, ocispec.Descriptor) error
	}).Delete(ctx, sig); err != nil {
		t.Fatal(err)
	}
}

// TestPushSignsWithAReferrerBundle: push stores, beside the .sig tag, a
// sigstore bundle referrer of the release, which the registry's
// referrers (here its tag-schema fallback: distribution has no
// referrers API) list, and which Verify accepts alone; pushing again adds
// neither a second bundle nor a second signature layer.
func TestPushSignsWithAReferrerBundle(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "acme/fs", nil)
	ctx := testCtx(t)
	rel, key, pub := pushFS(t, repo)
	refs, err := registry.Referrers(ctx, repo.target, indexOf(t, repo, rel), MediaTypeBundle)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 {
		t.Fatalf("the release has %d bundle referrers, want 1", len(refs))
	}
	if err := Sign(ctx, repo, rel.Digest, key); err != nil {
		t.Fatal(err)
	}
	if refs, _ = registry.Referrers(ctx, repo.target, indexOf(t, repo, rel), MediaTypeBundle); len(refs) != 1 {
		t.Fatalf("after signing again the release has %d bundle referrers, want 1", len(refs))
	}
	if m := sigManifest(t, repo, rel.Digest); len(m.Layers) != 1 {
		t.Fatalf("after signing again the .sig manifest has %d layers, want 1", len(m.Layers))
	}
	dropTagSignature(t, repo, rel.Digest)
	if err := Verify(ctx, repo, rel.Digest, pub); err != nil {
		t.Fatalf("Verify of the bundle alone: %v", err)
	}
	_, other := newKey(t)
	if err := Verify(ctx, repo, rel.Digest, other); !errors.Is(err, ErrUntrustedKey) {
		t.Fatalf("Verify with another key: %v, want ErrUntrustedKey", err)
	}
}

// sigManifest reads the manifest under the .sig tag of d.
func sigManifest(t testing.TB, repo *Repository, d digest.Digest) ocispec.Manifest {
	t.Helper()
	c := &sigCheck{repo: repo, d: d}
	m, err := c.tagManifest(testCtx(t))
	if err != nil || m == nil {
		t.Fatalf("no .sig manifest: %v", err)
	}
	return *m
}

// TestVerifyFindsCosignReferrers: a release whose only signature is a
// referrer, a sigstore bundle as cosign v3 makes it or cosign's signature
// manifest as cosign v2 stores it with --registry-referrers-mode=oci-1-1,
// is signed, and installs.
func TestVerifyFindsCosignReferrers(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "acme/fs", nil)
	ctx := testCtx(t)
	rel := pushUnsigned(t, repo, "fs", "2.1.0", fakeDescription("2.1.0", 1), false)
	index := indexOf(t, repo, rel)

	raw, pub := cosignBundle(t, rel.Digest)
	attach(t, repo, index, MediaTypeBundle, MediaTypeBundle, raw, nil)
	if err := Verify(ctx, repo, rel.Digest, []crypto.PublicKey{pub}); err != nil {
		t.Fatalf("Verify of cosign's bundle: %v", err)
	}

	key, pub2 := newKey(t)
	signer, err := signature.LoadSigner(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"critical":{"identity":{"docker-reference":"` + repo.Source + `"},"image":{"docker-manifest-digest":"` + rel.Digest.String() + `"},"type":"cosign container image signature"},"optional":null}`)
	sig, err := signer.SignMessage(bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	attach(t, repo, index, ArtifactTypeCosignSignature, MediaTypeSimpleSigning, payload, map[string]string{AnnotationSignature: base64.StdEncoding.EncodeToString(sig)})
	if err := Verify(ctx, repo, rel.Digest, pub2); err != nil {
		t.Fatalf("Verify of cosign's signature referrer: %v", err)
	}
}

// TestVerifyFindsReferrersListedByConfigType: a registry without the
// referrers API keeps a release's referrers in a tag-schema index, which
// the client that pushes a referrer writes. go-containerregistry's (cosign
// v2.6.5's sign --new-bundle-format) lists a sigstore bundle with its
// config's media type, application/vnd.oci.empty.v1+json, as its
// artifactType, not the manifest's own. The bundle still verifies (cosign
// v2 verify accepts it; plugkit install refused it as "none of its
// signatures verifies").
func TestVerifyFindsReferrersListedByConfigType(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "acme/fs", nil)
	ctx := testCtx(t)
	rel := pushUnsigned(t, repo, "fs", "2.1.0", fakeDescription("2.1.0", 1), false)
	raw, pub := cosignBundle(t, rel.Digest)
	ref := attach(t, repo, indexOf(t, repo, rel), MediaTypeBundle, MediaTypeBundle, raw, nil)
	ref.ArtifactType = ocispec.MediaTypeEmptyJSON // as go-containerregistry lists it
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{ref}}
	tagIndex(t, repo, idx, rel.Digest.Algorithm().String()+"-"+rel.Digest.Encoded())
	if err := Verify(ctx, repo, rel.Digest, []crypto.PublicKey{pub}); err != nil {
		t.Fatalf("Verify of a bundle listed with its config's type: %v", err)
	}
}

// TestVerifyRefusesHostileReferrers: the attacks on signatures found as
// referrers.
func TestVerifyRefusesHostileReferrers(t *testing.T) {
	parallel(t)
	t.Run("a referrer of another release", func(t *testing.T) {
		// The registry lists, among B's referrers (its tag-schema index),
		// the signature of A: trusted, but of A.
		repo := openRegistry(t, "acme/fs", nil)
		ctx := testCtx(t)
		a := pushUnsigned(t, repo, "fs", "2.1.0", fakeDescription("2.1.0", 1), false)
		b := pushUnsigned(t, repo, "memory", "2.1.1", fakeDescription("2.1.1", 1), false)
		raw, pub := cosignBundle(t, a.Digest)
		ref := attach(t, repo, indexOf(t, repo, a), MediaTypeBundle, MediaTypeBundle, raw, nil)
		idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{ref}}
		tagIndex(t, repo, idx, b.Digest.Algorithm().String()+"-"+b.Digest.Encoded())
		err := Verify(ctx, repo, b.Digest, []crypto.PublicKey{pub})
		if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), a.Digest.String()) {
			t.Fatalf("got %v, want ErrTampered naming the referrer's true subject %s", err, a.Digest)
		}
	})
	t.Run("a bundle naming another release", func(t *testing.T) {
		repo := openRegistry(t, "acme/fs", nil)
		ctx := testCtx(t)
		a := pushUnsigned(t, repo, "fs", "2.1.0", fakeDescription("2.1.0", 1), false)
		b := pushUnsigned(t, repo, "memory", "2.1.1", fakeDescription("2.1.1", 1), false)
		raw, pub := cosignBundle(t, a.Digest)                                            // signs A ...
		attach(t, repo, indexOf(t, repo, b), MediaTypeBundle, MediaTypeBundle, raw, nil) // ... attached to B
		err := Verify(ctx, repo, b.Digest, []crypto.PublicKey{pub})
		if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "other content") {
			t.Fatalf("got %v, want ErrTampered: the bundle is of other content", err)
		}
	})
	t.Run("a bundle by no trusted key", func(t *testing.T) {
		repo := openRegistry(t, "acme/fs", nil)
		ctx := testCtx(t)
		a := pushUnsigned(t, repo, "fs", "2.1.0", fakeDescription("2.1.0", 1), false)
		raw, _ := cosignBundle(t, a.Digest)
		attach(t, repo, indexOf(t, repo, a), MediaTypeBundle, MediaTypeBundle, raw, nil)
		_, trusted := newKey(t)
		err := Verify(ctx, repo, a.Digest, trusted)
		if !errors.Is(err, ErrUntrustedKey) {
			t.Fatalf("got %v, want ErrUntrustedKey", err)
		}
	})
	t.Run("a huge referrers list", func(t *testing.T) {
		// The registry's referrers API answers with more referrers than
		// the bound, in one page, or one each in endless pages.
		for name, c := range map[string]struct {
			perPage int
			opts    Options
			setting string
		}{
			"one page": {perPage: DefaultMaxReferrers + 1, setting: "MaxReferrers"},
			"pages":    {perPage: 1, opts: Options{MaxTagPages: 5}, setting: "MaxTagPages"},
		} {
			var served atomic.Int64
			repo := referrersAPI(t, c.opts, func(w http.ResponseWriter, r *http.Request) {
				idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex}
				for range c.perPage {
					n := served.Add(1)
					sum := sha256.Sum256([]byte{byte(n), byte(n >> 8), byte(n >> 16)})
					idx.Manifests = append(idx.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: MediaTypeBundle,
						Digest: digest.NewDigestFromBytes(digest.SHA256, sum[:]), Size: 500})
				}
				w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
				w.Header().Set("Link", "<"+r.URL.Path+"?n="+strconv.FormatInt(served.Load(), 10)+`>; rel="next"`)
				json.NewEncoder(w).Encode(idx)
			})
			a := pushUnsigned(t, repo, "fs", "2.1.0", fakeDescription("2.1.0", 1), false)
			_, pub := newKey(t)
			err := Verify(testCtx(t), repo, a.Digest, pub)
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), c.setting) {
				t.Errorf("%s: got %v, want ErrLimit naming %s", name, err, c.setting)
			}
			if n := served.Load(); n > int64(DefaultMaxReferrers+c.perPage) {
				t.Errorf("%s: %d referrers were read, more than the bound", name, n)
			}
		}
	})
	t.Run("a bundle over the bound", func(t *testing.T) {
		repo := openRegistry(t, "acme/fs", nil)
		ctx := testCtx(t)
		a := pushUnsigned(t, repo, "fs", "2.1.0", fakeDescription("2.1.0", 1), false)
		raw, pub := cosignBundle(t, a.Digest)
		// Valid JSON, a valid bundle followed by blanks past the bound.
		huge := append(raw, bytes.Repeat([]byte(" "), DefaultMaxSignatureBytes)...)
		attach(t, repo, indexOf(t, repo, a), MediaTypeBundle, MediaTypeBundle, huge, nil)
		err := Verify(ctx, repo, a.Digest, []crypto.PublicKey{pub})
		if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "MaxSignatureBytes") {
			t.Fatalf("got %v, want ErrLimit naming MaxSignatureBytes", err)
		}
	})
}

// referrersAPI opens a repository on a registry whose referrers API
// (which distribution lacks) serve answers.
func referrersAPI(t testing.TB, opts Options, serve http.HandlerFunc) *Repository {
	t.Helper()
	reg := registrytest.Start(t, registrytest.Options{Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/referrers/") {
				serve(w, r)
				return
			}
			h.ServeHTTP(w, r)
		})
	}})
	opts.PlainHTTP = true
	repo, err := Open(reg.Host+"/acme/fs", opts)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// tagIndex pushes idx and tags it.
func tagIndex(t testing.TB, repo *Repository, idx ocispec.Index, tag string) {
	t.Helper()
	pushTagged(t, repo, ocispec.MediaTypeImageIndex, idx, tag)
}

// pushTagged pushes v, a manifest or index of mediaType, as JSON, and
// tags it.
func pushTagged(t testing.TB, repo *Repository, mediaType string, v any, tag string) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
	if err := pushBytes(testCtx(t), repo, d, raw); err != nil {
		t.Fatal(err)
	}
	if err := repo.target.Tag(testCtx(t), d, tag); err != nil {
		t.Fatal(err)
	}
}

// TestRePushKeepsCoSignatures: a co-signature that cosign added to the
// .sig manifest (a second simple-signing layer, by another key) is still
// there, and verifies, after the release is pushed again.
func TestRePushKeepsCoSignatures(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "acme/fs", nil)
	ctx := testCtx(t)
	rel, key, _ := pushFS(t, repo)
	co, coPub := newKey(t)
	coSign(t, repo, rel.Digest, co)
	if err := Verify(ctx, repo, rel.Digest, coPub); err != nil {
		t.Fatalf("the co-signature does not verify: %v", err)
	}
	if _, err := Push(ctx, repo, Publication{Dir: releaseDir(t, pluginBinary(t, "fs")), Version: "2.1.0", Key: key, Cookie: objectstore.Cookie}); err != nil {
		t.Fatalf("push again: %v", err)
	}
	if m := sigManifest(t, repo, rel.Digest); len(m.Layers) != 2 {
		t.Errorf("after pushing again the .sig manifest has %d layers, want 2 (the co-signature kept)", len(m.Layers))
	}
	if err := Verify(ctx, repo, rel.Digest, coPub); err != nil {
		t.Fatalf("after pushing again the co-signature does not verify: %v", err)
	}
	// A new publisher key adds its signature beside the others.
	next, nextPub := newKey(t)
	if err := Sign(ctx, repo, rel.Digest, next); err != nil {
		t.Fatal(err)
	}
	if m := sigManifest(t, repo, rel.Digest); len(m.Layers) != 3 {
		t.Errorf("after signing with a third key the .sig manifest has %d layers, want 3", len(m.Layers))
	}
	for _, pub := range [][]crypto.PublicKey{coPub, nextPub} {
		if err := Verify(ctx, repo, rel.Digest, pub); err != nil {
			t.Errorf("after signing with a third key: %v", err)
		}
	}
}

// coSign adds a signature of d by key to the .sig manifest as cosign
// sign --key does: one more simple-signing layer.
func coSign(t testing.TB, repo *Repository, d digest.Digest, key crypto.Signer) {
	t.Helper()
	ctx := testCtx(t)
	m := sigManifest(t, repo, d)
	signer, err := signature.LoadSigner(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"critical":{"identity":{"docker-reference":"` + repo.Source + `"},"image":{"docker-manifest-digest":"` + d.String() + `"},"type":"cosign container image signature"},"optional":{"by":"co-signer"}}`)
	sig, err := signer.SignMessage(bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	l := ocispec.Descriptor{MediaType: MediaTypeSimpleSigning, Digest: digest.FromBytes(payload), Size: int64(len(payload)),
		Annotations: map[string]string{AnnotationSignature: base64.StdEncoding.EncodeToString(sig)}}
	if err := pushBytes(ctx, repo, l, payload); err != nil {
		t.Fatal(err)
	}
	m.Layers = append(m.Layers, l)
	pushTagged(t, repo, ocispec.MediaTypeImageManifest, m, signatureTag(d))
}
