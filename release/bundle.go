package release

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
)

// Signatures stored as OCI 1.1 referrers of a release (manifests whose
// subject is the release's index), as cosign v3 stores them by default.
const (
	// MediaTypeBundle is the artifact type, and layer media type, of a
	// sigstore bundle referrer.
	MediaTypeBundle = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// ArtifactTypeCosignSignature is the artifact type of cosign's
	// signature manifest stored as a referrer (cosign sign
	// --registry-referrers-mode=oci-1-1): simple-signing layers, as under
	// the sha256-HEX.sig tag.
	ArtifactTypeCosignSignature = "application/vnd.dev.cosign.artifact.sig.v1+json"
	// PredicateCosignSign is the predicate type of the in-toto statement
	// a signature bundle signs (cosign's): its subject is the release.
	PredicateCosignSign = "https://sigstore.dev/cosign/sign/v1"
	// inTotoPayloadType is the DSSE payload type of an in-toto statement.
	inTotoPayloadType = "application/vnd.in-toto+json"
	// inTotoStatementType is an in-toto statement's _type.
	inTotoStatementType = "https://in-toto.io/Statement/v1"
)

// Bounds on the signatures read from a registry.
const (
	// DefaultMaxReferrers bounds the referrers of a release Verify
	// reads, of any artifact type.
	DefaultMaxReferrers = 128
	// DefaultMaxSignatureBytes bounds one signature manifest or bundle
	// (a cosign bundle with a certificate chain and a transparency log
	// entry is under 20 KB).
	DefaultMaxSignatureBytes = 64 << 10
)

// statement is the in-toto statement a signature bundle signs.
type statement struct {
	Type          string             `json:"_type"`
	Subject       []statementSubject `json:"subject"`
	PredicateType string             `json:"predicateType"`
	Predicate     map[string]any     `json:"predicate"`
}

type statementSubject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// ecKeypair is a sigstore-go signing key pair of an ECDSA P-256 key,
// hinted, as sigstore-go hints its own, by its public key's SHA-256.
type ecKeypair struct{ k *ecdsa.PrivateKey }

func (e ecKeypair) GetHashAlgorithm() protocommon.HashAlgorithm {
	return protocommon.HashAlgorithm_SHA2_256
}
func (e ecKeypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
}
func (e ecKeypair) GetHint() []byte {
	der, err := x509.MarshalPKIXPublicKey(&e.k.PublicKey)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(der)
	return []byte(base64.StdEncoding.EncodeToString(sum[:]))
}
func (e ecKeypair) GetKeyAlgorithm() string          { return "ECDSA" }
func (e ecKeypair) GetPublicKey() crypto.PublicKey   { return &e.k.PublicKey }
func (e ecKeypair) GetPublicKeyPem() (string, error) { return pemOf(&e.k.PublicKey) }
func (e ecKeypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	sum := sha256.Sum256(data)
	sig, err := ecdsa.SignASN1(rand.Reader, e.k, sum[:])
	return sig, sum[:], err
}

func pemOf(k crypto.PublicKey) (string, error) {
	raw, err := cryptoutils.MarshalPublicKeyToPEM(k)
	return string(raw), err
}

// signBundle pushes a sigstore bundle, signed with key, of an in-toto
// statement naming the release index, as a referrer of it: what cosign
// v3 signs and stores, which `oras discover` lists and `oras cp -r`
// copies.
func signBundle(ctx context.Context, repo *Repository, index ocispec.Descriptor, key *ecdsa.PrivateKey) error {
	st := statement{
		Type:          inTotoStatementType,
		Subject:       []statementSubject{{Name: strings.TrimPrefix(repo.Source, LayoutPrefix), Digest: map[string]string{index.Digest.Algorithm().String(): index.Digest.Encoded()}}},
		PredicateType: PredicateCosignSign,
		Predicate:     map[string]any{},
	}
	payload, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	b, err := sign.Bundle(&sign.DSSEData{Data: payload, PayloadType: inTotoPayloadType}, ecKeypair{key}, sign.BundleOptions{Context: ctx})
	if err != nil {
		return fmt.Errorf("sign: make the sigstore bundle: %w", err)
	}
	raw, err := protojson.Marshal(b)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	dg := digest.FromBytes(raw)
	layer := ocispec.Descriptor{MediaType: MediaTypeBundle, Digest: dg, Size: int64(len(raw)),
		Annotations: map[string]string{ocispec.AnnotationTitle: dg.Algorithm().String() + "-" + dg.Encoded() + ".sigstore.json"}}
	if err := pushBytes(ctx, repo, layer, raw); err != nil {
		return err
	}
	_, err = oras.PackManifest(ctx, repo.target, oras.PackManifestVersion1_1, MediaTypeBundle, oras.PackManifestOptions{
		Subject: &index,
		Layers:  []ocispec.Descriptor{layer},
		ManifestAnnotations: map[string]string{
			"dev.sigstore.bundle.content":       "dsse-envelope",
			"dev.sigstore.bundle.predicateType": PredicateCosignSign,
			ocispec.AnnotationCreated:           time.Now().UTC().Format(time.RFC3339),
		},
	})
	if err != nil {
		return repo.wrap("push the signature bundle", err)
	}
	return nil
}

// sigCheck checks a release's signatures against trusted keys, and
// remembers why none verified.
type sigCheck struct {
	repo      *Repository
	d         digest.Digest
	keys      []crypto.PublicKey
	verifiers []signature.Verifier
	found     int   // signatures seen
	tampered  error // a trusted signature of other content
	limit     error // a signature over a bound
}

// referrers lists the signature referrers of the release (bundles and
// cosign signature manifests), through the registry's referrers API or
// its tag-schema fallback (sha256-HEX), within the bounds.
func (c *sigCheck) referrers(ctx context.Context) ([]ocispec.Descriptor, error) {
	var all []ocispec.Descriptor
	pages := 0
	add := func(page []ocispec.Descriptor) error {
		pages++
		all = append(all, page...)
		if len(all) > c.repo.limits.referrers {
			return c.repo.overLimit(fmt.Sprintf("%s has more than %d referrers", c.d, c.repo.limits.referrers), c.repo.limits.referrers, "MaxReferrers", "max-referrers")
		}
		if pages > c.repo.limits.pages {
			return c.repo.overLimit(fmt.Sprintf("the referrers of %s fill more than %d pages", c.d, c.repo.limits.pages), c.repo.limits.pages, "MaxTagPages", "max-tag-pages")
		}
		return nil
	}
	var err error
	if rl, ok := c.repo.target.(registry.ReferrerLister); ok { // a registry: the digest is all it needs
		err = rl.Referrers(ctx, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: c.d}, "", add)
	} else { // an image layout: its own index of what refers to what
		var desc ocispec.Descriptor
		if desc, err = c.repo.target.Resolve(ctx, c.d.String()); errors.Is(err, errdef.ErrNotFound) {
			return nil, nil
		}
		var list []ocispec.Descriptor
		if err == nil {
			if list, err = registry.Referrers(ctx, c.repo.target, desc, ""); err == nil {
				err = add(list)
			}
		}
	}
	if err != nil {
		if errors.Is(err, ErrLimit) {
			return nil, err
		}
		return nil, c.repo.wrap("list the referrers of "+c.d.String(), err)
	}
	var sigs []ocispec.Descriptor
	for _, r := range all {
		switch r.ArtifactType {
		case MediaTypeBundle, ArtifactTypeCosignSignature:
			sigs = append(sigs, r)
		case ocispec.MediaTypeEmptyJSON:
			// go-containerregistry's tag-schema index (cosign v2's sign
			// --new-bundle-format on a registry without the referrers
			// API) lists a referrer by its config's media type, not its
			// artifactType: its manifest says what it is (referrer).
			sigs = append(sigs, r)
		}
	}
	return sigs, nil
}

// anyReferrer says whether a signature referrer of the release verifies.
func (c *sigCheck) anyReferrer(ctx context.Context) (bool, error) {
	refs, err := c.referrers(ctx)
	if err != nil {
		return false, err
	}
	for _, r := range refs {
		if ok, err := c.referrer(ctx, r); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// referrer checks one signature referrer: its subject must be the
// release, and its bundle or simple-signing layers verify.
func (c *sigCheck) referrer(ctx context.Context, r ocispec.Descriptor) (bool, error) {
	c.found++
	if r.Size > c.repo.limits.signature {
		c.limit = c.repo.overLimit(fmt.Sprintf("the signature manifest %s of %s is %d bytes", r.Digest, c.d, r.Size), c.repo.limits.signature, "MaxSignatureBytes", "max-signature-bytes")
		return false, nil
	}
	raw, err := fetchSmall(ctx, c.repo, r)
	if errors.Is(err, errdef.ErrNotFound) {
		return false, nil // a referrer deleted, its listing stale
	}
	if err != nil {
		return false, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return false, nil
	}
	if m.Subject == nil || m.Subject.Digest != c.d {
		subject := "no subject"
		if m.Subject != nil {
			subject = "the subject " + m.Subject.Digest.String()
		}
		c.tampered = fmt.Errorf("%s@%s: %w: the registry lists the signature %s as a referrer of it, but it has %s: the registry's referrers are wrong or were altered", c.repo.Source, c.d, ErrTampered, r.Digest, subject)
		return false, nil
	}
	if m.ArtifactType == ArtifactTypeCosignSignature || r.ArtifactType == ArtifactTypeCosignSignature && m.ArtifactType == "" {
		return c.simpleSigning(ctx, m.Layers)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != MediaTypeBundle {
		return false, nil
	}
	l := m.Layers[0]
	if l.Size > c.repo.limits.signature {
		c.limit = c.repo.overLimit(fmt.Sprintf("the signature bundle %s of %s is %d bytes", l.Digest, c.d, l.Size), c.repo.limits.signature, "MaxSignatureBytes", "max-signature-bytes")
		return false, nil
	}
	raw, err = fetchSmall(ctx, c.repo, l)
	if err != nil {
		return false, err
	}
	return c.bundle(raw), nil
}

// bundle verifies a sigstore bundle with the trusted keys, through
// sigstore-go: a DSSE envelope of an in-toto statement of cosign's
// signing predicate whose subject is the release, or a message signature
// of its digest. Only the key's signature is checked, as `cosign verify
// --key --insecure-ignore-tlog` does: a transparency log entry or
// timestamp the bundle carries is not.
func (c *sigCheck) bundle(raw []byte) bool {
	var b sgbundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return false
	}
	want, err := hex.DecodeString(c.d.Encoded())
	if err != nil || c.d.Algorithm() != digest.SHA256 {
		return false
	}
	for _, v := range c.verifiers {
		tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
			return root.NewExpiringKey(v, time.Time{}, time.Time{}), nil
		})
		sv, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
		if err != nil {
			continue
		}
		res, err := sv.Verify(&b, verify.NewPolicy(verify.WithArtifactDigest("sha256", want), verify.WithKey()))
		if err == nil {
			if res.Statement != nil && res.Statement.GetPredicateType() != PredicateCosignSign {
				continue // an attestation of something else, not a signature
			}
			return true
		}
		// Signed by this key, but of other content?
		if _, err := sv.Verify(&b, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithKey())); err == nil {
			c.tampered = fmt.Errorf("%s@%s: %w: a sigstore bundle signed by a trusted key is of other content than this release: the release was changed after it was signed, or the signature was copied from another", c.repo.Source, c.d, ErrTampered)
		}
	}
	return false
}
