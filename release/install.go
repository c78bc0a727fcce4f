package release

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"google.golang.org/protobuf/proto"
	"oras.land/oras-go/v2/content/oci"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
)

// Target says where and how Install installs.
type Target struct {
	// Dir is the plugin directory the binary is installed into (a
	// manager's Dirs entry); it is created when missing.
	Dir string
	// Keys are the publishers' public keys the host trusts; a release
	// signed by none of them is refused.
	Keys []crypto.PublicKey
	// Cookie is the plugin's magic cookie, to start the installed binary
	// for its Describe answer.
	Cookie handshake.Cookie
	// Cache, when set, is a content-addressed cache of binaries (an OCI
	// image layout): a binary found there is not downloaded again.
	Cache string
	// Locked, when set, is the lock file's entry for the plugin: the
	// release and the binary installed (this platform's, or the
	// WebAssembly module's) must have its digests.
	Locked *LockedPlugin
	// Wasm says when the release's WebAssembly module (PlatformWasm) is
	// installed instead of this machine's native binary; the zero value,
	// WasmFallback, only when the release has no native binary for it.
	Wasm WasmUse
	// Guests runs a WebAssembly module installed (see Wasm) for its
	// Describe check: a runtime for modules, such as a wasmhost.Runtime,
	// which compiles the module first, outside the check's time bound.
	// Give one whose compilation cache (wasmhost.Config.CacheDir) is the
	// host's manager's, and its first start finds the module compiled;
	// one with wasmhost.Config.Interpret checks a 25 MB module in about a
	// second, against several to compile it. Nil refuses to install a
	// module; Install never imports a WebAssembly runtime itself.
	Guests host.GuestRunner
	// Progress, when set, is told of a download from the repository (not
	// from Cache) before it starts: the file's name and size. The bytes
	// are written to the writer it returns as they arrive, and the writer
	// is closed when the download ends, whole or not; nil, no report.
	Progress func(name string, size int64) io.WriteCloser

	// hooks let tests see and change Install's steps; nil but in tests.
	hooks *installHooks
}

// installHooks are what a test of Install sees and changes; each nil
// function does the real thing (or nothing).
type installHooks struct {
	// createTemp makes the temporary file the binary is written to:
	// os.CreateTemp.
	createTemp func(dir, pattern string) (io.WriteCloser, string, error)
	// beforeDescribe runs with the staged file's path before it is
	// started.
	beforeDescribe func(tmp string)
	// stepDone marks the end of one of Install's steps.
	stepDone func(step string)
}

func (h *installHooks) step(step string) {
	if h != nil && h.stepDone != nil {
		h.stepDone(step)
	}
}

func (h *installHooks) staged(tmp string) {
	if h != nil && h.beforeDescribe != nil {
		h.beforeDescribe(tmp)
	}
}

func (h *installHooks) create(dir, pattern string) (io.WriteCloser, string, error) {
	if h != nil && h.createTemp != nil {
		return h.createTemp(dir, pattern)
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, "", err
	}
	return f, f.Name(), nil
}

// WasmUse says when Install installs a release's WebAssembly module
// (PlatformWasm) rather than this machine's native binary.
type WasmUse int

// The choices of Target.Wasm.
const (
	// WasmFallback installs this machine's native binary when the
	// release has one, else its module.
	WasmFallback WasmUse = iota
	// WasmPrefer installs the module when the release has one, else this
	// machine's native binary.
	WasmPrefer
	// WasmOnly installs the module, and refuses a release without one.
	WasmOnly
	// WasmNever installs this machine's native binary only.
	WasmNever
)

// Platforms returns the platforms of a release that Install, with use,
// installs on this machine, the preferred first: its native build's
// (OS/ARCH) and PlatformWasm, or one of them. Give them to
// Selection.Platforms so that Resolve passes over a release Install
// would refuse.
func (use WasmUse) Platforms() []string {
	switch use {
	case WasmPrefer:
		return []string{PlatformWasm, hostPlatform}
	case WasmOnly:
		return []string{PlatformWasm}
	case WasmNever:
		return []string{hostPlatform}
	}
	return []string{hostPlatform, PlatformWasm}
}

// platform is the platform of rel that Install installs with use on this
// machine: the first of use.Platforms() that rel has.
func (use WasmUse) platform(repo *Repository, rel Release) (string, error) {
	for _, p := range use.Platforms() {
		if rel.has([]string{p}) {
			return p, nil
		}
	}
	native, module := rel.has([]string{hostPlatform}), rel.has([]string{PlatformWasm})
	switch {
	case use == WasmOnly && native:
		return "", fmt.Errorf("%s:%s has no WebAssembly module (%s; it has %s): install its native binary (release.WasmFallback, plugkit install --wasm fallback), or ask the publisher for a module", repo.Source, rel.Version, PlatformWasm, strings.Join(rel.Platforms, ", "))
	case use == WasmNever && module && !native:
		return "", fmt.Errorf("%s:%s has no binary for %s, only a WebAssembly module (%s): allow it (release.WasmFallback, plugkit install --wasm fallback), or ask the publisher for a build", repo.Source, rel.Version, hostPlatform, PlatformWasm)
	}
	return "", fmt.Errorf("%s:%s has no binary for %s and no WebAssembly module (it has %s): ask the publisher for a build", repo.Source, rel.Version, hostPlatform, strings.Join(rel.Platforms, ", "))
}

// Installed is an installed release.
type Installed struct {
	// Path is the installed binary (NAME.wasm for a WebAssembly
	// module).
	Path string
	// Platform is the platform of the binary installed: this machine's,
	// or PlatformWasm.
	Platform string
	// SHA256 is its hex SHA-256, for manager.Config.Pins.
	SHA256 string
	// Release is what was installed.
	Release Release
}

// MetadataError says an installed binary's own Describe answer differs
// from the release metadata it was chosen by; Install removed it without
// installing it (a binary already at Path stays).
type MetadataError struct {
	// Source and Version name the release; Path is where the binary
	// would have been installed.
	Source, Version, Path string
	// Claimed is the release's metadata, Served the binary's answer.
	Claimed, Served *catalogv1.DescribeResponse
}

// Error names the release, what its metadata claims and what the binary
// serves.
func (e *MetadataError) Error() string {
	return fmt.Sprintf("%s:%s: the release's metadata does not match its binary, so it was removed and not installed at %s: the metadata claims %s, the binary serves %s; the publisher must republish the release (plugkit release push starts the binary for its metadata)",
		e.Source, e.Version, e.Path, summary(e.Claimed), summary(e.Served))
}

// summary says which kinds and majors a Describe answer lists.
func summary(d *catalogv1.DescribeResponse) string {
	var parts []string
	for _, k := range d.GetKinds() {
		var ms []string
		for _, m := range k.GetMajors() {
			ms = append(ms, fmt.Sprintf("%d.%d %v", m.GetMajor(), m.GetMinor(), m.GetNames()))
		}
		parts = append(parts, k.GetName()+" "+strings.Join(ms, ", "))
	}
	return fmt.Sprintf("version %q, %s", d.GetPluginVersion(), strings.Join(parts, "; "))
}

// Install installs this platform's binary of rel into t.Dir (or its
// WebAssembly module, as t.Wasm says, checked in t.Guests; a manager with
// a runtime for modules runs it from there): it verifies
// the release's signature against t.Keys, downloads the binary (or takes
// it from t.Cache) checking its digest against the signed manifest into a
// temporary file, starts it for its Describe answer, and installs it
// (fsync, rename) under a lock on the directory only if that answer is the
// release's metadata; otherwise it removes it (a *MetadataError). The
// signature check runs beside the read of the platform's manifest, and
// the download starts only once it succeeded and the signed metadata's
// version is the tag's (else ErrTampered); the binary is never usable
// under its name before it is installed.
func Install(ctx context.Context, repo *Repository, rel Release, t Target) (Installed, error) {
	if t.Locked != nil && t.Locked.Index != rel.Digest {
		return Installed{}, fmt.Errorf("%s:%s is %s, the lock file has %s: %w; the tag was moved to other content. If the new content is trusted, delete the plugin's entry from the lock file and install again", repo.Source, rel.Version, rel.Digest, t.Locked.Index, ErrLockMismatch)
	}
	if len(t.Keys) == 0 {
		return Installed{}, Verify(ctx, repo, rel.Digest, nil)
	}
	if err := os.MkdirAll(t.Dir, 0o755); err != nil {
		return Installed{}, fmt.Errorf("install: %w", err)
	}
	unlock, err := lockDir(ctx, t.Dir)
	if err != nil {
		return Installed{}, err
	}
	defer unlock()
	platform, err := t.Wasm.platform(repo, rel)
	if err != nil {
		return Installed{}, err
	}
	if platform == PlatformWasm && t.Guests == nil {
		return Installed{}, fmt.Errorf("%s:%s: the release's WebAssembly module is what installs here, and Target.Guests is nil: set it to a runtime for modules (wasmhost.New; the plugkit command does), or install a native binary (release.WasmNever)", repo.Source, rel.Version)
	}
	st, layer, err := fetchVerified(ctx, repo, rel, t, platform)
	if err != nil {
		return Installed{}, err
	}
	t.hooks.step("fetched")
	synced := st.startSync()
	t.hooks.staged(st.tmp)
	served, err := describeStaged(ctx, st, t.Cookie, layer.Digest.Encoded(), t.Guests)
	t.hooks.step("described")
	if err == nil && !proto.Equal(served, rel.Description) {
		err = &MetadataError{Source: repo.Source, Version: rel.Version, Path: st.path, Claimed: rel.Description, Served: served}
	}
	syncErr := <-synced // the sync ends before the file is renamed or removed
	if err == nil {
		err = st.install(syncErr)
	}
	if err != nil {
		st.discard()
		return Installed{}, err
	}
	t.hooks.step("installed")
	if t.Cache != "" {
		cacheBinary(ctx, t.Cache, layer, st.path)
	}
	return Installed{Path: st.path, Platform: platform, SHA256: layer.Digest.Encoded(), Release: rel}, nil
}

// fetchVerified checks the release's signature while it reads the
// platform manifest (its digest is in the index the signature covers),
// and only once the signature verified checks that the signed release is
// the version it is tagged (a downgrade by re-tagging is ErrTampered) and
// downloads the binary into a temporary file: nothing of a binary is read
// from a registry before then. A failed signature check cancels the
// manifest's read and is the error returned.
func fetchVerified(ctx context.Context, repo *Repository, rel Release, t Target, platform string) (*staged, ocispec.Descriptor, error) {
	vctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	verified := make(chan error, 1)
	go func() {
		err := Verify(vctx, repo, rel.Digest, t.Keys)
		if err != nil {
			cancel(err)
		}
		verified <- err
	}()
	layer, err := binaryLayer(vctx, repo, rel, platform)
	if err != nil {
		cancel(err) // the release is refused whatever its signature
	}
	if verr := <-verified; verr != nil && context.Cause(vctx) == verr { // the signature failed first
		return nil, layer, verr
	}
	if err != nil {
		return nil, layer, err
	}
	if err := signedVersion(repo, rel); err != nil {
		return nil, layer, err
	}
	if t.Locked != nil {
		if err := t.Locked.check(platform, layer.Digest); err != nil {
			return nil, layer, err
		}
	}
	st, err := download(ctx, repo, layer, filepath.Join(t.Dir, fileName(layer)), t.Cache, t.hooks, t.Progress)
	return st, layer, err
}

// signedVersion refuses a release whose signed metadata is of another
// version than its tag: push tags a release with the plugin's own
// version, so a registry serving a signed release under another tag
// (1.3.0 as 9.0.0) is downgrading it.
func signedVersion(repo *Repository, rel Release) error {
	if v := rel.Description.GetPluginVersion(); strings.TrimPrefix(v, "v") != strings.TrimPrefix(rel.Version, "v") {
		return fmt.Errorf("%s:%s: %w: the signed release is version %q, served under the tag %s: the registry re-tagged another release (a downgrade); install a version by its own tag, and tell the registry's operator", repo.Source, rel.Version, ErrTampered, v, rel.Version)
	}
	return nil
}

// binaryLayer reads the release's manifest for platform and returns its
// binary layer, with a safe file name.
func binaryLayer(ctx context.Context, repo *Repository, rel Release, platform string) (ocispec.Descriptor, error) {
	md, ok := rel.manifests[platform]
	if !ok {
		return ocispec.Descriptor{}, fmt.Errorf("%s:%s has no binary for %s (it has %s): ask the publisher for a build", repo.Source, rel.Version, platform, strings.Join(rel.Platforms, ", "))
	}
	raw, err := fetchSmall(ctx, repo, md)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	mediaType := platformBinary{platform: platform}.layerType()
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil || len(m.Layers) != 1 || m.Layers[0].MediaType != mediaType {
		return ocispec.Descriptor{}, fmt.Errorf("%s:%s: the %s manifest does not hold one %s layer: republish the release with plugkit release push", repo.Source, rel.Version, platform, mediaType)
	}
	l := m.Layers[0]
	name := fileName(l)
	if !plainName(name) {
		return ocispec.Descriptor{}, fmt.Errorf("%s:%s: the %s binary's file name %q is not a plain file name: republish the release", repo.Source, rel.Version, platform, name)
	}
	if platform == PlatformWasm && !strings.HasSuffix(name, ".wasm") {
		return ocispec.Descriptor{}, fmt.Errorf("%s:%s: the WebAssembly module's file name %q does not end in .wasm: republish the release", repo.Source, rel.Version, name)
	}
	if l.Digest.Algorithm() != digest.SHA256 {
		return ocispec.Descriptor{}, fmt.Errorf("%s:%s: the %s binary's digest %s is not SHA-256", repo.Source, rel.Version, platform, l.Digest)
	}
	return l, nil
}

// plainName says whether name is a plain file name to install a binary
// as: no directory, not hidden (the temporary and lock files are dot
// files), and nothing unprintable (control or bidirectional formatting
// characters).
func plainName(name string) bool {
	return name != "" && name == filepath.Base(name) && !strings.ContainsAny(name, `/\`) && !strings.HasPrefix(name, ".") &&
		!strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) })
}

// download copies the blob l into a temporary file beside path, from
// cache when it holds it, checking its size and SHA-256, telling
// progress (Target.Progress) of a download; nothing is at path yet.
// hooks makes the temporary file.
func download(ctx context.Context, repo *Repository, l ocispec.Descriptor, path, cache string, hooks *installHooks, progress func(string, int64) io.WriteCloser) (*staged, error) {
	if cache != "" {
		store, err := oci.New(cache)
		if err != nil {
			return nil, fmt.Errorf("install: open the cache %s: %w", cache, err)
		}
		if ok, _ := store.Exists(ctx, l); ok {
			rc, err := store.Fetch(ctx, l)
			if err == nil {
				st, err := stage(path, rc, l, hooks.create)
				rc.Close()
				if err == nil {
					return st, nil
				}
			}
			// A bad cache entry: drop it, and fall back to the
			// repository.
			store.Delete(ctx, l)
		}
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rc, err := repo.target.Fetch(fctx, l)
	if err != nil {
		return nil, repo.wrap("download "+l.Digest.String(), err)
	}
	body := stallGuard(rc, repo.stall, cancel)
	if progress != nil {
		if w := progress(filepath.Base(path), l.Size); w != nil {
			body = io.TeeReader(body, w)
			defer w.Close()
		}
	}
	st, err := stage(path, body, l, hooks.create)
	rc.Close()
	if cause := context.Cause(fctx); err != nil && errors.Is(cause, errStalled) {
		err = fmt.Errorf("%s: download %s: %w (nothing was installed)", repo.Source, l.Digest, cause)
	}
	if errors.Is(err, ErrTampered) {
		return nil, fmt.Errorf("%s: %w", repo.Source, err)
	}
	return st, err
}

// cacheBinary stores the installed binary at path in the cache, best
// effort: a cache failure does not fail the install.
func cacheBinary(ctx context.Context, cache string, l ocispec.Descriptor, path string) {
	store, err := oci.New(cache)
	if err != nil {
		return
	}
	if ok, _ := store.Exists(ctx, l); ok {
		return
	}
	if f, err := os.Open(path); err == nil {
		store.Push(ctx, l, f)
		f.Close()
	}
}

// errStalled says a download's body stopped arriving.
var errStalled = errors.New("the registry stopped sending the blob: no data for longer than the response timeout")

// stallGuard returns r, cancelling the download with errStalled when a
// read waits longer than d for data; d 0 means no bound (a local
// directory).
func stallGuard(r io.Reader, d time.Duration, cancel context.CancelCauseFunc) io.Reader {
	if d <= 0 {
		return r
	}
	return &stallReader{r: r, d: d, cancel: cancel}
}

type stallReader struct {
	r      io.Reader
	d      time.Duration
	cancel context.CancelCauseFunc
}

func (s *stallReader) Read(p []byte) (int, error) {
	t := time.AfterFunc(s.d, func() { s.cancel(errStalled) })
	defer t.Stop()
	return s.r.Read(p)
}
