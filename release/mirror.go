package release

import (
	"context"
	"errors"
	"fmt"

	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"
)

// Mirror copies the release tagged version, with its binaries and its
// signatures, from src to dst: e.g. from a registry into an OCI
// image-layout directory (LayoutPrefix) that machines without registry
// access install from. The signatures are the manifest under the
// sha256-HEX.sig tag and the signature referrers Verify reads (sigstore
// bundles, cosign's signature manifests), within src's bounds.
func Mirror(ctx context.Context, src, dst *Repository, version string) error {
	d, err := oras.Copy(ctx, src.target, version, dst.target, version, oras.DefaultCopyOptions)
	if err != nil {
		// A missing blob is "not found" too: say the release is missing
		// only when its tag is.
		if _, rerr := src.target.Resolve(ctx, version); src.missing(version, rerr) != nil {
			return fmt.Errorf("mirror: %w", src.missing(version, rerr))
		}
		return fmt.Errorf("mirror %s:%s to %s: %w", src.Source, version, dst.Source, err)
	}
	signatures := 0
	sig := signatureTag(d.Digest)
	if _, err := oras.Copy(ctx, src.target, sig, dst.target, sig, oras.DefaultCopyOptions); err == nil {
		signatures++
	} else if !errors.Is(err, errdef.ErrNotFound) {
		return fmt.Errorf("mirror the signature of %s:%s to %s: %w (hosts refuse an unsigned release)", src.Source, version, dst.Source, err)
	}
	refs, err := (&sigCheck{repo: src, d: d.Digest}).referrers(ctx)
	if err != nil {
		return fmt.Errorf("mirror the signatures of %s:%s: %w", src.Source, version, err)
	}
	for _, r := range refs {
		if r.Size > src.limits.signature {
			continue // Verify would not read it
		}
		if err := oras.CopyGraph(ctx, src.target, dst.target, r, oras.DefaultCopyGraphOptions); err != nil {
			return fmt.Errorf("mirror the signature %s of %s:%s to %s: %w (hosts refuse an unsigned release)", r.Digest, src.Source, version, dst.Source, err)
		}
		signatures++
	}
	if signatures == 0 {
		return fmt.Errorf("mirror %s:%s: %w: it has no signature (no tag %s, no signature referrer), and hosts refuse an unsigned release: sign it first (plugkit release push --key, or cosign sign --key)", src.Source, version, ErrUnsigned, sig)
	}
	return nil
}
