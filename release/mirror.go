package release

import (
	"context"
	"fmt"

	"oras.land/oras-go/v2"
)

// Mirror copies the release tagged version, with its binaries and its
// signature, from src to dst: e.g. from a registry into an OCI
// image-layout directory (LayoutPrefix) that machines without registry
// access install from.
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
	sig := signatureTag(d.Digest)
	if _, err := oras.Copy(ctx, src.target, sig, dst.target, sig, oras.DefaultCopyOptions); err != nil {
		return fmt.Errorf("mirror the signature of %s:%s to %s: %w (hosts refuse an unsigned release)", src.Source, version, dst.Source, err)
	}
	return nil
}
