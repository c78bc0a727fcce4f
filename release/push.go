package release

import (
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/describe"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/hostwire"
)

// Media types and annotations of a release.
const (
	// ArtifactType marks a release's index and its platform manifests.
	ArtifactType = "application/vnd.plugkit.plugin.v1"
	// MediaTypeBinary is the media type of a platform's binary layer.
	MediaTypeBinary = "application/vnd.plugkit.plugin.binary.v1"
	// MediaTypeWasm is the media type of the layer of a release's
	// WebAssembly module (PlatformWasm): the standard application/wasm,
	// as the Wasm OCI artifact layout also uses.
	MediaTypeWasm = "application/wasm"
	// PlatformWasm is the platform, OS/ARCH, of a release's WebAssembly
	// (wasip1) module, one for every machine: Go's GOOS and GOARCH, as
	// OCI platforms follow them.
	PlatformWasm = "wasip1/wasm"
	// AnnotationDescribe holds, on a release's index, the binary's
	// Describe answer as protojson.
	AnnotationDescribe = "dev.plugkit.describe"
	// AnnotationFileName holds, on a binary's layer, the file name it is
	// installed under (objectstore-fs, objectstore-fs.exe, NAME.wasm).
	// The layer's title is OS_ARCH/NAME, its path in the release
	// directory push took, distinct for every platform, so that `oras
	// pull` of a whole release writes that directory; a release pushed
	// before this annotation has the file name as its title.
	AnnotationFileName = "dev.plugkit.file-name"
)

// maxManifest bounds a manifest or index read from a repository.
const maxManifest = 4 << 20

// Publication is what Push publishes.
type Publication struct {
	// Dir holds one binary per platform: Dir/OS_ARCH/NAME, e.g.
	// dist/linux_amd64/objectstore-fs and
	// dist/windows_amd64/objectstore-fs.exe; it may also hold one
	// WebAssembly module for every platform (PlatformWasm),
	// Dir/wasip1_wasm/NAME.wasm.
	Dir string
	// Version is the release's tag; it must equal the plugin version the
	// binary's Describe reports.
	Version string
	// Key signs the release (see Sign); LoadPrivateKey reads a PEM file.
	Key crypto.Signer
	// Cookie is the plugin's magic cookie, to start this platform's
	// binary (or, without one, the module) for its Describe answer.
	Cookie handshake.Cookie
	// Guests runs the release's WebAssembly module when it is what is
	// described (the release has no binary for this machine): a runtime
	// for modules, such as a wasmhost.Runtime (with
	// wasmhost.Config.Interpret, one Describe starts sooner). Nil refuses
	// such a release; Push never imports a WebAssembly runtime itself.
	Guests host.GuestRunner
}

// Push publishes and signs one release: it starts this platform's binary
// of p.Dir (or, when it has none, its WebAssembly module) for its
// Describe answer, pushes every platform's binary and the index that
// holds them and the answer, tags it p.Version and signs its digest.
func Push(ctx context.Context, repo *Repository, p Publication) (Release, error) {
	if p.Key == nil {
		return Release{}, errors.New("push: no signing key: give a PEM private key (--key; see LoadPrivateKey); hosts refuse unsigned releases")
	}
	bins, err := scanDir(p.Dir)
	if err != nil {
		return Release{}, err
	}
	desc, err := describeRelease(ctx, p, bins)
	if err != nil {
		return Release{}, fmt.Errorf("push: %w", err)
	}
	if v := desc.GetPluginVersion(); strings.TrimPrefix(v, "v") != strings.TrimPrefix(p.Version, "v") {
		return Release{}, fmt.Errorf("push: the binary says it is version %q, the reference's tag is %q: tag the release with the plugin's own version", v, p.Version)
	}
	rel, err := pushRelease(ctx, repo, p.Version, bins, desc, false)
	if err != nil {
		return Release{}, err
	}
	if err := Sign(ctx, repo, rel.Digest, p.Key); err != nil {
		return Release{}, err
	}
	return rel, nil
}

// describeRelease returns the Describe answer of the release in bins:
// this machine's binary's, else the WebAssembly module's.
func describeRelease(ctx context.Context, p Publication, bins []platformBinary) (*catalogv1.DescribeResponse, error) {
	var local, module string
	for _, b := range bins {
		switch b.platform {
		case hostPlatform:
			local = b.path
		case PlatformWasm:
			module = b.path
		}
	}
	switch {
	case local != "":
		return describeBinary(ctx, local, p.Cookie, describe.DefaultTimeout)
	case module == "":
		return nil, fmt.Errorf("%s has no binary for this machine's platform %s (%s/%s/NAME) and no WebAssembly module (%s/%s/NAME.wasm): one is started for the release's Describe answer", p.Dir, hostPlatform, p.Dir, platformDir(hostPlatform), p.Dir, platformDir(PlatformWasm))
	case p.Cookie.Key == "":
		return nil, fmt.Errorf("describe %s: no magic cookie: set the plugin's handshake cookie (--cookie KEY=VALUE)", module)
	}
	d, err := describeModule(ctx, host.Command{Path: module, Cookie: p.Cookie}, p.Guests, "Publication.Guests")
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", module, err)
	}
	return d, nil
}

// platformDir is the directory of a release directory (Publication.Dir)
// that holds platform's binary: OS_ARCH, as Go's GOOS and GOARCH.
func platformDir(platform string) string { return strings.ReplaceAll(platform, "/", "_") }

// platformBinary is one platform's binary in a release directory.
type platformBinary struct {
	platform string // "linux/amd64"
	path     string
}

// layerType is the media type of the binary's layer.
func (b platformBinary) layerType() string {
	if b.platform == PlatformWasm {
		return MediaTypeWasm
	}
	return MediaTypeBinary
}

// checkModule refuses a module outside DIR/wasip1_wasm/NAME.wasm and
// anything else inside it: install chooses by platform, and the manager
// runs a module by its content.
func checkModule(b platformBinary) error {
	module := hostwire.IsWasm(b.path)
	switch {
	case b.platform != PlatformWasm && module:
		return fmt.Errorf("push: %s is a WebAssembly module in the directory of the native platform %s: put it in %s/%s.wasm (one module serves every platform)", b.path, b.platform, platformDir(PlatformWasm), strings.TrimSuffix(filepath.Base(b.path), ".wasm"))
	case b.platform == PlatformWasm && !module:
		return fmt.Errorf("push: %s is not a WebAssembly module (it does not start with \"\\0asm\"): build it with GOOS=wasip1 GOARCH=wasm go build -o %s/NAME.wasm", b.path, platformDir(PlatformWasm))
	case b.platform == PlatformWasm && !strings.HasSuffix(b.path, ".wasm"):
		return fmt.Errorf("push: the WebAssembly module %s must be named NAME.wasm: it is installed under that name beside native binaries", b.path)
	}
	return nil
}

// scanDir reads DIR/OS_ARCH/NAME; a WebAssembly module is
// DIR/wasip1_wasm/NAME.wasm.
func scanDir(dir string) ([]platformBinary, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("push: read the release directory: %w", err)
	}
	var out []platformBinary
	for _, e := range ents {
		goos, goarch, ok := strings.Cut(e.Name(), "_")
		if !e.IsDir() || !ok || goos == "" || goarch == "" {
			return nil, fmt.Errorf("push: %s: every entry of the release directory is a directory OS_ARCH (linux_amd64) holding one binary", filepath.Join(dir, e.Name()))
		}
		files, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("push: %w", err)
		}
		if len(files) != 1 || !files[0].Type().IsRegular() {
			return nil, fmt.Errorf("push: %s holds %d entries: it must hold exactly one binary file", filepath.Join(dir, e.Name()), len(files))
		}
		b := platformBinary{platform: goos + "/" + goarch, path: filepath.Join(dir, e.Name(), files[0].Name())}
		if err := checkModule(b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("push: %s is empty: put each platform's binary in %s/OS_ARCH/NAME", dir, dir)
	}
	return out, nil
}

// pushRelease pushes the binaries, a manifest per platform and the index
// carrying desc, and tags the index version. Unless overwrite is set, a
// version already published with other content is refused: lock files
// and caches rely on a version's content never changing.
func pushRelease(ctx context.Context, repo *Repository, version string, bins []platformBinary, desc *catalogv1.DescribeResponse, overwrite bool) (Release, error) {
	if _, err := compat.ParseSemver(version); err != nil {
		return Release{}, fmt.Errorf("push: %w", err)
	}
	sort.Slice(bins, func(i, j int) bool { return bins[i].platform < bins[j].platform })
	idx := ocispec.Index{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageIndex,
		ArtifactType: ArtifactType,
	}
	for _, b := range bins {
		m, err := pushPlatform(ctx, repo, b)
		if err != nil {
			return Release{}, err
		}
		idx.Manifests = append(idx.Manifests, m)
	}
	meta, err := protojson.Marshal(desc)
	if err != nil {
		return Release{}, fmt.Errorf("push: %w", err)
	}
	idx.Annotations = map[string]string{AnnotationDescribe: string(meta), ocispec.AnnotationVersion: version}
	raw, err := json.Marshal(idx)
	if err != nil {
		return Release{}, fmt.Errorf("push: %w", err)
	}
	d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactType, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
	if err := pushBytes(ctx, repo, d, raw); err != nil {
		return Release{}, err
	}
	if old, err := repo.target.Resolve(ctx, version); err == nil && old.Digest != d.Digest && !overwrite {
		return Release{}, fmt.Errorf("push: %s:%s is already published with other content (%s): a version's content never changes, or lock files break; publish a new version", repo.Source, version, old.Digest)
	} else if err != nil && !errors.Is(err, errdef.ErrNotFound) {
		return Release{}, repo.wrap("resolve "+version, err)
	}
	if err := repo.target.Tag(ctx, d, version); err != nil {
		return Release{}, repo.wrap("tag "+version, err)
	}
	return newRelease(version, d.Digest, idx, desc), nil
}

// pushPlatform pushes one binary and its manifest.
func pushPlatform(ctx context.Context, repo *Repository, b platformBinary) (ocispec.Descriptor, error) {
	f, err := os.Open(b.path)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push: %w", err)
	}
	defer f.Close()
	dg, err := digest.SHA256.FromReader(f)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push: read %s: %w", b.path, err)
	}
	size, err := f.Seek(0, 1)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push: %w", err)
	}
	layer := ocispec.Descriptor{MediaType: b.layerType(), Digest: dg, Size: size,
		Annotations: map[string]string{
			ocispec.AnnotationTitle: platformDir(b.platform) + "/" + filepath.Base(b.path),
			AnnotationFileName:      filepath.Base(b.path),
		}}
	exists, err := repo.target.Exists(ctx, layer)
	if err != nil {
		return ocispec.Descriptor{}, repo.wrap("check blob "+dg.String(), err)
	}
	if !exists {
		if _, err := f.Seek(0, 0); err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("push: %w", err)
		}
		if err := repo.target.Push(ctx, layer, f); err != nil {
			return ocispec.Descriptor{}, repo.wrap("push "+b.path, err)
		}
	}
	m, err := oras.PackManifest(ctx, repo.target, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
		Layers:              []ocispec.Descriptor{layer},
		ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: "1970-01-01T00:00:00Z"},
	})
	if err != nil {
		return ocispec.Descriptor{}, repo.wrap("push the manifest of "+b.platform, err)
	}
	goos, goarch, _ := strings.Cut(b.platform, "/")
	m.Platform = &ocispec.Platform{OS: goos, Architecture: goarch}
	m.Annotations = nil
	return m, nil
}

// fileName is the name a binary's layer l is installed under: its
// AnnotationFileName, or, in a release pushed before it, its title.
func fileName(l ocispec.Descriptor) string {
	if n, ok := l.Annotations[AnnotationFileName]; ok {
		return n
	}
	return l.Annotations[ocispec.AnnotationTitle]
}

// pushBytes pushes a small blob or manifest unless it is there already.
func pushBytes(ctx context.Context, repo *Repository, d ocispec.Descriptor, raw []byte) error {
	exists, err := repo.target.Exists(ctx, d)
	if err != nil {
		return repo.wrap("check "+d.Digest.String(), err)
	}
	if exists {
		return nil
	}
	if err := repo.target.Push(ctx, d, bytes.NewReader(raw)); err != nil {
		return repo.wrap("push "+d.Digest.String(), err)
	}
	return nil
}
