package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	version "github.com/hashicorp/go-version"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/encoding/protojson"
	"oras.land/oras-go/v2"

	"github.com/plugkit/plugkit/compat"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
)

// Release is one published release, as its index says; reading it
// downloads no binary.
type Release struct {
	// Version is the release's tag, "2.1.0".
	Version string
	// Digest is the index's digest, what the signature covers.
	Digest digest.Digest
	// Description is the Describe answer the release was published with.
	Description *catalogv1.DescribeResponse
	// Platforms lists the release's platforms ("linux/amd64"), sorted.
	Platforms []string

	manifests map[string]ocispec.Descriptor // by platform
}

func newRelease(v string, d digest.Digest, idx ocispec.Index, desc *catalogv1.DescribeResponse) Release {
	r := Release{Version: v, Digest: d, Description: desc, manifests: map[string]ocispec.Descriptor{}}
	for _, m := range idx.Manifests {
		if m.Platform == nil {
			continue
		}
		p := m.Platform.OS + "/" + m.Platform.Architecture
		r.manifests[p] = m
		r.Platforms = append(r.Platforms, p)
	}
	sort.Strings(r.Platforms)
	return r
}

// Fetch reads the release tagged version, metadata only.
func Fetch(ctx context.Context, repo *Repository, tag string) (Release, error) {
	return readIndex(ctx, repo, tag, nil)
}

// readIndex reads the release tagged version; the index's bytes are
// added to total, when given, and must keep it within
// Options.MaxMetadataBytes.
func readIndex(ctx context.Context, repo *Repository, tag string, total *atomic.Int64) (Release, error) {
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	d, rc, err := oras.Fetch(fctx, repo.target, tag, oras.DefaultFetchOptions)
	if merr := repo.missing(tag, err); merr != nil {
		return Release{}, merr
	}
	if err != nil {
		return Release{}, repo.wrap("fetch release "+tag, err)
	}
	defer rc.Close()
	lim := repo.limits
	raw, err := io.ReadAll(io.LimitReader(stallGuard(rc, repo.stall, cancel), lim.index+1))
	if err != nil {
		return Release{}, repo.wrap("read release "+tag, err)
	}
	if int64(len(raw)) > lim.index {
		return Release{}, repo.overLimit("the index of release "+tag+" is larger", fmt.Sprintf("%d bytes", lim.index), "MaxIndexBytes", "max-index-bytes")
	}
	if total != nil && total.Add(int64(len(raw))) > lim.total {
		return Release{}, repo.overLimit("the indexes of its releases add up to more bytes", fmt.Sprintf("%d bytes", lim.total), "MaxMetadataBytes", "max-metadata-bytes")
	}
	got := digest.FromBytes(raw)
	if d.Digest != "" && d.Digest != got {
		return Release{}, fmt.Errorf("%s: release %s: the index has digest %s, the registry says %s: the registry or a proxy corrupted it", repo.Source, tag, got, d.Digest)
	}
	return parseIndex(repo, tag, got, raw)
}

// parseIndex reads a release's index.
func parseIndex(repo *Repository, tag string, d digest.Digest, raw []byte) (Release, error) {
	var idx ocispec.Index
	if err := json.Unmarshal(raw, &idx); err != nil || idx.ArtifactType != ArtifactType {
		return Release{}, fmt.Errorf("%s:%s is not a plugkit release (an OCI index of artifact type %s): publish it with plugkit release push", repo.Source, tag, ArtifactType)
	}
	var desc catalogv1.DescribeResponse
	if err := protojson.Unmarshal([]byte(idx.Annotations[AnnotationDescribe]), &desc); err != nil {
		return Release{}, fmt.Errorf("%s:%s: the release's %s annotation is not a Describe answer: %v; republish it with plugkit release push", repo.Source, tag, AnnotationDescribe, err)
	}
	return newRelease(tag, d, idx, &desc), nil
}

// listParallelism bounds the index reads List makes at once.
const listParallelism = 8

// List reads every release of the repository: each tag that is a
// semantic version, newest first. It reads one index per tag, up to 8 at
// once, and no binary, within the bounds of the repository's Options on
// tags, pages of tags, bytes per index and in all, and time; an answer
// beyond one is an error wrapping ErrLimit.
func List(ctx context.Context, repo *Repository) ([]Release, error) {
	lim := repo.limits
	ctx, cancel := context.WithTimeoutCause(ctx, lim.time, repo.overLimit("listing its releases (tags and indexes) takes longer", lim.time, "MetadataTimeout", "metadata-timeout"))
	defer cancel()
	var tags []string
	pages, seen := 0, 0
	err := repo.tags.Tags(ctx, "", func(ts []string) error {
		pages, seen = pages+1, seen+len(ts)
		if pages > lim.pages {
			return repo.overLimit("its tag list runs to more pages", fmt.Sprintf("%d pages", lim.pages), "MaxTagPages", "max-tag-pages")
		}
		if seen > lim.tags {
			return repo.overLimit("its tag list holds more tags", fmt.Sprintf("%d tags", lim.tags), "MaxTags", "max-tags")
		}
		for _, t := range ts {
			if _, err := compat.ParseSemver(t); err == nil {
				tags = append(tags, t)
			}
		}
		return nil
	})
	if err != nil {
		return nil, limitOr(ctx, err, repo.wrap("list tags", err))
	}
	out := make([]Release, len(tags))
	var total atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(listParallelism)
	for i, t := range tags {
		g.Go(func() error {
			r, err := readIndex(gctx, repo, t, &total)
			out[i] = r
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, limitOr(ctx, err, err)
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := compat.ParseSemver(out[i].Version)
		b, _ := compat.ParseSemver(out[j].Version)
		return a.Compare(b) > 0
	})
	return out, nil
}

// limitOr returns err when it is a bound's, else the bound ctx ended
// by (MetadataTimeout), else other.
func limitOr(ctx context.Context, err, other error) error {
	if errors.Is(err, ErrLimit) {
		return err
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrLimit) {
		return cause
	}
	return other
}

// Selection is what Resolve chooses by: the host's kind and majors, and
// an optional version constraint.
type Selection struct {
	// Requirement is the kind and the majors the host speaks.
	Requirement compat.Requirement
	// Constraint limits versions, Terraform style: "~> 2.0",
	// ">= 1.2, < 3". Empty allows every version.
	Constraint string
	// Platforms, when set, passes over a release without a build for
	// any of them (OS/ARCH, or PlatformWasm for its WebAssembly module),
	// as Terraform passes over a provider version without a package
	// for the machine: give Target.Wasm.Platforms() to resolve the
	// newest release Install can install here. Empty selects
	// regardless of platform (plugkit lock, which installs nothing).
	Platforms []string
}

// NoFitError says no release fits a Selection, and which release to
// select instead, in the words of package compat.
type NoFitError struct {
	// Source is the repository searched.
	Source string
	// Selection is what no release met.
	Selection Selection
	// Constrained is the newest release meeting the constraint (with
	// other majors), empty when none does or there is no constraint.
	Constrained string
	// Compatible lists the releases and the compatible ones.
	Compatible compat.Result
	// Skipped lists, newest first, the releases that meet the
	// requirement and the constraint but were passed over for having a
	// build for none of Selection.Platforms.
	Skipped []Release
}

// Error names the latest compatible release and the constraint that
// selects it, or the earliest when every compatible release is newer
// than what the constraint selects; when releases were skipped for
// their platforms, it names them and what each has instead.
func (e *NoFitError) Error() string {
	if len(e.Skipped) > 0 {
		return e.skippedMessage()
	}
	if e.Selection.Constraint == "" {
		return e.Compatible.Message("")
	}
	return fmt.Sprintf("No release of %s meets both the constraint %q and %s.\n%s",
		e.Source, e.Selection.Constraint, e.Selection.Requirement, e.Compatible.Message(e.Constrained))
}

// skippedMessage says which releases fit but have no build for
// Selection.Platforms, and what to do.
func (e *NoFitError) skippedMessage() string {
	var b strings.Builder
	meets := e.Selection.Requirement.String()
	if e.Selection.Constraint != "" {
		meets = fmt.Sprintf("%s and the constraint %q", meets, e.Selection.Constraint)
	}
	fmt.Fprintf(&b, "No release of %s that meets %s has a build for %s. Skipped: ", e.Source, meets, strings.Join(e.Selection.Platforms, " or "))
	other := false // a skipped release has this machine's build or a module, which another Target.Wasm installs
	for i, r := range e.Skipped {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "v%s (it has %s)", r.Version, strings.Join(r.Platforms, ", "))
		other = other || r.has([]string{hostPlatform, PlatformWasm})
	}
	fmt.Fprintf(&b, ".\nAsk the publisher for a build for %s", strings.Join(e.Selection.Platforms, " or "))
	if other {
		b.WriteString(", or install what the release has (release.WasmFallback, plugkit install --wasm fallback)")
	}
	b.WriteString(".\n")
	return b.String()
}

// has says whether r has a build for one of platforms (any, when there
// are none).
func (r Release) has(platforms []string) bool {
	if len(platforms) == 0 {
		return true
	}
	for _, p := range platforms {
		if r.manifests[p].Digest != "" {
			return true
		}
	}
	return false
}

// Resolve picks the newest release of the repository that speaks one of
// the selection's majors, meets its constraint and has a build for one
// of its platforms, reading metadata only. When none does, the error is
// a *NoFitError, which names the releases skipped for their platforms.
func Resolve(ctx context.Context, repo *Repository, sel Selection) (Release, error) {
	var cons version.Constraints
	if sel.Constraint != "" {
		c, err := version.NewConstraint(sel.Constraint)
		if err != nil {
			return Release{}, fmt.Errorf("constraint %q: %w (write e.g. \"~> 2.0\" or \">= 1.2, < 3\")", sel.Constraint, err)
		}
		cons = c
	}
	rels, err := List(ctx, repo)
	if err != nil {
		return Release{}, err
	}
	if len(rels) == 0 {
		return Release{}, fmt.Errorf("%s has no release (no tag that is a semantic version): publish one with plugkit release push", repo.Source)
	}
	ix := &compat.Index{Plugins: map[string][]compat.Release{}}
	constrained := ""
	var skipped []Release
	for _, r := range rels { // newest first
		installable := r.has(sel.Platforms)
		if installable { // the advice names only releases this machine can install
			ix.Plugins[repo.Source] = append(ix.Plugins[repo.Source], r.compat())
		}
		v, err := version.NewVersion(r.Version)
		if err != nil || (cons != nil && !cons.Check(v)) {
			continue
		}
		switch {
		case !sel.Requirement.Compatible(r.compat()):
			if constrained == "" && cons != nil && installable {
				constrained = r.Version
			}
		case !installable:
			skipped = append(skipped, r)
		default:
			return r, nil
		}
	}
	if len(ix.Plugins) == 0 { // no release has the platforms: advise on them all
		for _, r := range rels {
			ix.Plugins[repo.Source] = append(ix.Plugins[repo.Source], r.compat())
		}
	}
	res, err := ix.Resolve(repo.Source, sel.Requirement)
	if err != nil {
		return Release{}, err
	}
	return Release{}, &NoFitError{Source: repo.Source, Selection: sel, Constrained: constrained, Compatible: res, Skipped: skipped}
}

// compat returns the release as package compat sees it: for each kind,
// its "MAJOR.MINOR" versions.
func (r Release) compat() compat.Release {
	kinds := map[string][]string{}
	for _, k := range r.Description.GetKinds() {
		for _, m := range k.GetMajors() {
			kinds[k.GetName()] = append(kinds[k.GetName()], fmt.Sprintf("%d.%d", m.GetMajor(), m.GetMinor()))
		}
	}
	return compat.Release{Version: r.Version, Manifest: compat.Manifest{Version: 1, Metadata: compat.Metadata{Kinds: kinds}}}
}

// Majors returns the majors the release's metadata claims for kind.
func (r Release) Majors(kind string) []int {
	var out []int
	for _, k := range r.Description.GetKinds() {
		if k.GetName() == kind {
			for _, m := range k.GetMajors() {
				out = append(out, int(m.GetMajor()))
			}
		}
	}
	slices.Sort(out)
	return out
}
