package release

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"
)

// Where and how cosign stores a signature made with a key.
const (
	// MediaTypeSimpleSigning is the media type of cosign's signature
	// payload layer.
	MediaTypeSimpleSigning = "application/vnd.dev.cosign.simplesigning.v1+json"
	// AnnotationSignature holds, on that layer, the base64 signature.
	AnnotationSignature = "dev.cosignproject.cosign/signature"
	// simpleSigningType is the payload's critical.type.
	simpleSigningType = "cosign container image signature"
)

// Errors Verify returns (wrapped, with the details): test with errors.Is.
var (
	// ErrUnsigned: the release has no signature.
	ErrUnsigned = errors.New("the release is unsigned")
	// ErrUntrustedKey: the release has signatures, none by a trusted key.
	ErrUntrustedKey = errors.New("the release is not signed by a trusted key")
	// ErrTampered: a signature covers other content than the release
	// holds, or a blob differs from its digest.
	ErrTampered = errors.New("the release's content differs from what was signed")
)

// simpleSigning is cosign's signature payload ("simple signing").
type simpleSigning struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]any `json:"optional"`
}

// signatureTag is where cosign looks for a manifest's signatures.
func signatureTag(d digest.Digest) string {
	return d.Algorithm().String() + "-" + d.Encoded() + ".sig"
}

// LoadPrivateKey reads a PEM private key for Sign: an ECDSA P-256 key,
// unencrypted (PKCS#8 "PRIVATE KEY" or SEC 1 "EC PRIVATE KEY"), or in
// the encrypted format of `cosign generate-key-pair` ("ENCRYPTED
// SIGSTORE PRIVATE KEY", or cosign's older "ENCRYPTED COSIGN PRIVATE
// KEY": scrypt and NaCl secretbox), whose password is read, as cosign
// reads it, from the environment variable COSIGN_PASSWORD.
func LoadPrivateKey(path string) (crypto.Signer, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	var k crypto.PrivateKey
	if b, _ := pem.Decode(raw); b != nil && strings.HasPrefix(b.Type, "ENCRYPTED ") && b.Type != "ENCRYPTED PRIVATE KEY" {
		// cosign's format: PKCS#8 sealed with scrypt and secretbox.
		pw, ok := os.LookupEnv(cosignPasswordEnv)
		if !ok {
			return nil, fmt.Errorf("signing key %s is encrypted in cosign's format (%s): set %s to its password, as for cosign sign --key", path, b.Type, cosignPasswordEnv)
		}
		der, err := encrypted.Decrypt(b.Bytes, []byte(pw))
		if err != nil {
			return nil, fmt.Errorf("signing key %s (%s) does not decrypt with the password in %s (%v): set it to the password given to cosign generate-key-pair", path, b.Type, cosignPasswordEnv, err)
		}
		if k, err = x509.ParsePKCS8PrivateKey(der); err != nil {
			return nil, fmt.Errorf("signing key %s (%s): the decrypted key is not PKCS#8 (%v): make a new one with cosign generate-key-pair", path, b.Type, err)
		}
	} else if k, err = cryptoutils.UnmarshalPEMToPrivateKey(raw, cryptoutils.SkipPassword); err != nil {
		return nil, fmt.Errorf("signing key %s: %w (want a PEM ECDSA P-256 key: cosign generate-key-pair's cosign.key with %s set, or an unencrypted one, e.g. openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256)", path, err, cosignPasswordEnv)
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("signing key %s: %T is not an ECDSA P-256 key, the kind cosign makes", path, k)
	}
	return ec, nil
}

// cosignPasswordEnv holds the password of a key in cosign's encrypted
// format, as cosign reads it.
const cosignPasswordEnv = "COSIGN_PASSWORD"

// LoadPublicKeys reads PEM public keys (cosign.pub), one per file, for
// Verify; a key the key policy does not trust (an RSA key under
// MinRSABits, an ECDSA key on a curve other than P-256, P-384 or P-521,
// any kind but ECDSA, Ed25519 and RSA) is an error saying why.
func LoadPublicKeys(paths ...string) ([]crypto.PublicKey, error) {
	var out []crypto.PublicKey
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("trusted key: %w", err)
		}
		k, err := cryptoutils.UnmarshalPEMToPublicKey(raw)
		if err != nil {
			return nil, fmt.Errorf("trusted key %s: not a PEM public key (%v): give cosign's cosign.pub or openssl pkey -pubout's output", p, err)
		}
		if err := trustable(k); err != nil {
			return nil, fmt.Errorf("trusted key %s: %w", p, err)
		}
		out = append(out, k)
	}
	return out, nil
}

// MinRSABits is the size under which an RSA key is not trusted.
const MinRSABits = 2048

// trustable says why Verify does not trust k, or nil. The policy: push
// signs with ECDSA P-256 (cosign's default); a release is trusted when
// signed by an ECDSA key on P-256, P-384 or P-521, an Ed25519 key, or
// an RSA key of MinRSABits or more (the keys cosign verifies, cloud
// KMS keys among them). Smaller RSA keys can be factored (NIST SP
// 800-131A has disallowed them for signatures since 2014), and anything
// else is no key cosign makes.
func trustable(k crypto.PublicKey) error {
	const advice = "ask the publisher for an ECDSA P-256 key (openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256), what plugkit release push signs with"
	switch k := k.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return nil
		}
		return fmt.Errorf("an ECDSA key on the curve %s is not trusted (only P-256, P-384 and P-521 are): %s", k.Curve.Params().Name, advice)
	case ed25519.PublicKey:
		return nil
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < MinRSABits {
			return fmt.Errorf("an RSA key of %d bits is too weak to trust: RSA keys under %d bits can be factored (NIST SP 800-131A disallows them for signatures); %s", n, MinRSABits, advice)
		}
		return nil
	}
	return fmt.Errorf("a %T key is not trusted (only ECDSA P-256, P-384 and P-521, Ed25519, and RSA of %d bits or more are): %s", k, MinRSABits, advice)
}

// Sign signs the manifest d of the repository as `cosign sign --key`
// does, in both of cosign's ways: a simple-signing payload naming d,
// signed with ECDSA over its SHA-256, added to the manifest tagged
// sha256-HEX.sig (cosign v2's default; the signatures already there,
// co-signatures by other keys, are kept), and a sigstore bundle of an
// in-toto statement naming d, pushed as an OCI 1.1 referrer of d (cosign
// v3's default, which `oras discover` lists and `oras cp -r` copies).
// A signature by key already in either place is not added again.
func Sign(ctx context.Context, repo *Repository, d digest.Digest, key crypto.Signer) error {
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return fmt.Errorf("sign: %T is not an ECDSA key", key)
	}
	signer, err := signature.LoadECDSASigner(ec, crypto.SHA256)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	if err := signWith(ctx, repo, d, signer); err != nil {
		return err
	}
	index, err := repo.target.Resolve(ctx, d.String())
	if err != nil {
		return repo.wrap("resolve "+d.String(), err)
	}
	own, err := ownCheck(repo, d, signer)
	if err != nil {
		return err
	}
	if ok, err := own.anyReferrer(ctx); ok || err != nil {
		return err // signed by this key already
	}
	return signBundle(ctx, repo, index, ec)
}

// ownCheck checks signatures against signer's own key.
func ownCheck(repo *Repository, d digest.Digest, signer signature.Signer) (*sigCheck, error) {
	pub, err := signer.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return &sigCheck{repo: repo, d: d, keys: []crypto.PublicKey{pub}, verifiers: []signature.Verifier{v}}, nil
}

// signWith adds a signature of d's simple-signing payload by signer to
// the manifest tagged sha256-HEX.sig, keeping the signatures there.
func signWith(ctx context.Context, repo *Repository, d digest.Digest, signer signature.Signer) error {
	own, err := ownCheck(repo, d, signer)
	if err != nil {
		return err
	}
	old, err := own.tagManifest(ctx)
	if err != nil {
		return err
	}
	var layers []ocispec.Descriptor
	if old != nil {
		if ok, err := own.simpleSigning(ctx, old.Layers); ok || err != nil {
			return err // signed by this key already
		}
		layers = old.Layers
	}
	var p simpleSigning
	p.Critical.Identity.DockerReference = strings.TrimPrefix(repo.Source, LayoutPrefix)
	p.Critical.Image.DockerManifestDigest = d.String()
	p.Critical.Type = simpleSigningType
	payload, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	sig, err := signer.SignMessage(bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	layer := ocispec.Descriptor{MediaType: MediaTypeSimpleSigning, Digest: digest.FromBytes(payload), Size: int64(len(payload)),
		Annotations: map[string]string{AnnotationSignature: base64.StdEncoding.EncodeToString(sig)}}
	if err := pushBytes(ctx, repo, layer, payload); err != nil {
		return err
	}
	layers = append(layers, layer)
	// cosign's signature image has an image config; a minimal one keeps
	// it small (cosign does not read it).
	diffIDs, err := json.Marshal(layerDigests(layers))
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	cfgRaw := []byte(`{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":` + string(diffIDs) + `}}`)
	cfg := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(cfgRaw), Size: int64(len(cfgRaw))}
	if err := pushBytes(ctx, repo, cfg, cfgRaw); err != nil {
		return err
	}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, Config: cfg, Layers: layers}
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	md := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
	if err := pushBytes(ctx, repo, md, raw); err != nil {
		return err
	}
	if err := repo.target.Tag(ctx, md, signatureTag(d)); err != nil {
		return repo.wrap("tag the signature", err)
	}
	return nil
}

// layerDigests lists the digests of layers.
func layerDigests(layers []ocispec.Descriptor) []digest.Digest {
	out := make([]digest.Digest, len(layers))
	for i, l := range layers {
		out[i] = l.Digest
	}
	return out
}

// Verify checks that the manifest d of the repository carries a
// signature, by one of keys, of a payload naming d: cosign's signature
// under the tag sha256-HEX.sig, or a referrer of d (found through the
// registry's referrers API, or its tag-schema fallback): a sigstore
// bundle or cosign's signature manifest. It returns an error wrapping
// ErrUnsigned, ErrUntrustedKey, ErrTampered or ErrLimit to say which
// check failed.
func Verify(ctx context.Context, repo *Repository, d digest.Digest, keys []crypto.PublicKey) error {
	if len(keys) == 0 {
		return errors.New("verify: no trusted key: give the publisher's public key (--key cosign.pub)")
	}
	c := &sigCheck{repo: repo, d: d, keys: keys}
	for i, k := range keys {
		if err := trustable(k); err != nil {
			return fmt.Errorf("verify: trusted key %d of %d: %w", i+1, len(keys), err)
		}
		v, err := signature.LoadVerifier(k, crypto.SHA256)
		if err != nil {
			return fmt.Errorf("verify: trusted key: %w", err)
		}
		c.verifiers = append(c.verifiers, v)
	}
	return c.run(ctx)
}

// run checks the signatures under the .sig tag, then the referrers.
func (c *sigCheck) run(ctx context.Context) error {
	repo, d := c.repo, c.d
	m, err := c.tagManifest(ctx)
	if err != nil {
		return err
	}
	if m != nil {
		c.found++
		if ok, err := c.simpleSigning(ctx, m.Layers); ok || err != nil {
			return err
		}
	}
	if ok, err := c.anyReferrer(ctx); ok || err != nil {
		return err
	}
	switch {
	case c.tampered != nil:
		return c.tampered
	case c.limit != nil:
		return c.limit
	case c.found == 0:
		return fmt.Errorf("%s@%s: %w: it has no signature (no tag %s, no signature referrer): sign it with plugkit release push --key or cosign sign --key", repo.Source, d, ErrUnsigned, signatureTag(d))
	}
	return fmt.Errorf("%s@%s: %w: none of its %d signature(s) verifies with the %d trusted key(s): it was signed by another key, or altered", repo.Source, d, ErrUntrustedKey, c.found, len(c.keys))
}

// tagManifest reads the signature manifest under the .sig tag; nil when
// there is none, or it is unreadable.
func (c *sigCheck) tagManifest(ctx context.Context) (*ocispec.Manifest, error) {
	repo := c.repo
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	_, rc, err := oras.Fetch(fctx, repo.target, signatureTag(c.d), oras.DefaultFetchOptions)
	if errors.Is(err, errdef.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, repo.wrap("fetch the signature", err)
	}
	defer rc.Close()
	var m ocispec.Manifest
	if err := json.NewDecoder(io.LimitReader(stallGuard(rc, repo.stall, cancel), maxManifest)).Decode(&m); err != nil {
		if cause := context.Cause(fctx); cause != nil { // stalled, or ctx is done
			return nil, repo.wrap("read the signature", cause)
		}
		c.found++ // a signature tag, unreadable
		return nil, nil
	}
	return &m, nil
}

// simpleSigning checks cosign's simple-signing layers: true when one is
// signed by a trusted key and names the release.
func (c *sigCheck) simpleSigning(ctx context.Context, layers []ocispec.Descriptor) (bool, error) {
	repo, d := c.repo, c.d
	payloads := map[digest.Digest][]byte{} // each fetched once, however many layers name it
	for _, l := range layers {
		if l.MediaType != MediaTypeSimpleSigning {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(l.Annotations[AnnotationSignature])
		if err != nil {
			continue
		}
		payload, ok := payloads[l.Digest]
		if !ok {
			if payload, err = fetchSmall(ctx, repo, l); err != nil {
				return false, err
			}
			payloads[l.Digest] = payload
		}
		trusted := false
		for _, v := range c.verifiers {
			if v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(payload)) == nil {
				trusted = true
				break
			}
		}
		if !trusted {
			continue
		}
		var p simpleSigning
		if err := json.Unmarshal(payload, &p); err != nil || p.Critical.Type != simpleSigningType {
			c.tampered = fmt.Errorf("%s@%s: %w: a signed payload is not cosign simple signing", repo.Source, d, ErrTampered)
			continue
		}
		if p.Critical.Image.DockerManifestDigest != d.String() {
			c.tampered = fmt.Errorf("%s@%s: %w: the trusted signature is of manifest %s, not of this one: the release was changed after it was signed", repo.Source, d, ErrTampered, p.Critical.Image.DockerManifestDigest)
			continue
		}
		return true, nil
	}
	return false, nil
}

// fetchSmall reads a small blob and checks its digest.
func fetchSmall(ctx context.Context, repo *Repository, d ocispec.Descriptor) ([]byte, error) {
	if d.Size > maxManifest {
		return nil, fmt.Errorf("%s: blob %s is %d bytes, more than the %d a manifest or payload may be", repo.Source, d.Digest, d.Size, maxManifest)
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rc, err := repo.target.Fetch(fctx, d)
	if err != nil {
		return nil, repo.wrap("fetch "+d.Digest.String(), err)
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(stallGuard(rc, repo.stall, cancel), d.Size+1))
	if err != nil {
		return nil, repo.wrap("read "+d.Digest.String(), err)
	}
	if got := digest.FromBytes(raw); got != d.Digest {
		return nil, fmt.Errorf("%s: %w: blob %s has digest %s", repo.Source, ErrTampered, d.Digest, got)
	}
	return raw, nil
}
