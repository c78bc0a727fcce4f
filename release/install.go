package release

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"google.golang.org/protobuf/proto"
	"oras.land/oras-go/v2/content/oci"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
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
	// release and this platform's binary must have its digests.
	Locked *LockedPlugin
}

// Installed is an installed release.
type Installed struct {
	// Path is the installed binary.
	Path string
	// SHA256 is its hex SHA-256, for manager.Config.Pins.
	SHA256 string
	// Release is what was installed.
	Release Release
}

// MetadataError says an installed binary's own Describe answer differs
// from the release metadata it was chosen by; Install removed it.
type MetadataError struct {
	// Source and Version name the release; Path is where the binary was
	// before it was removed.
	Source, Version, Path string
	// Claimed is the release's metadata, Served the binary's answer.
	Claimed, Served *catalogv1.DescribeResponse
}

func (e *MetadataError) Error() string {
	return fmt.Sprintf("%s:%s: the release's metadata does not match its binary, so it was removed from %s: the metadata claims %s, the binary serves %s; the publisher must republish the release (plugkit release push starts the binary for its metadata)",
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

// Install installs this platform's binary of rel into t.Dir: it verifies
// the release's signature against t.Keys, downloads the binary (or takes
// it from t.Cache) checking its digest against the signed manifest, writes
// it atomically (temporary file, fsync, rename) under a lock on the
// directory, then starts it and removes it again if its Describe answer
// differs from the release's metadata (a *MetadataError).
func Install(ctx context.Context, repo *Repository, rel Release, t Target) (Installed, error) {
	here := runtime.GOOS + "/" + runtime.GOARCH
	if t.Locked != nil && t.Locked.Index != rel.Digest {
		return Installed{}, fmt.Errorf("%s:%s is %s, the lock file has %s: %w; the tag was moved to other content. If the new content is trusted, delete the plugin's entry from the lock file and install again", repo.Source, rel.Version, rel.Digest, t.Locked.Index, ErrLockMismatch)
	}
	if err := Verify(ctx, repo, rel.Digest, t.Keys); err != nil {
		return Installed{}, err
	}
	layer, err := binaryLayer(ctx, repo, rel, here)
	if err != nil {
		return Installed{}, err
	}
	if t.Locked != nil {
		if err := t.Locked.check(here, layer.Digest); err != nil {
			return Installed{}, err
		}
	}
	name := layer.Annotations[ocispec.AnnotationTitle]
	if err := os.MkdirAll(t.Dir, 0o755); err != nil {
		return Installed{}, fmt.Errorf("install: %w", err)
	}
	unlock, err := lockDir(ctx, t.Dir)
	if err != nil {
		return Installed{}, err
	}
	defer unlock()
	path := filepath.Join(t.Dir, name)
	if err := download(ctx, repo, layer, path, t.Cache); err != nil {
		return Installed{}, err
	}
	served, err := describeBinary(ctx, path, t.Cookie, layer.Digest.Encoded())
	if err == nil && !proto.Equal(served, rel.Description) {
		err = &MetadataError{Source: repo.Source, Version: rel.Version, Path: path, Claimed: rel.Description, Served: served}
	}
	if err != nil {
		os.Remove(path)
		return Installed{}, err
	}
	return Installed{Path: path, SHA256: layer.Digest.Encoded(), Release: rel}, nil
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
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil || len(m.Layers) != 1 || m.Layers[0].MediaType != MediaTypeBinary {
		return ocispec.Descriptor{}, fmt.Errorf("%s:%s: the %s manifest does not hold one %s layer: republish the release with plugkit release push", repo.Source, rel.Version, platform, MediaTypeBinary)
	}
	l := m.Layers[0]
	name := l.Annotations[ocispec.AnnotationTitle]
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return ocispec.Descriptor{}, fmt.Errorf("%s:%s: the %s binary's file name %q is not a plain file name: republish the release", repo.Source, rel.Version, platform, name)
	}
	if l.Digest.Algorithm() != digest.SHA256 {
		return ocispec.Descriptor{}, fmt.Errorf("%s:%s: the %s binary's digest %s is not SHA-256", repo.Source, rel.Version, platform, l.Digest)
	}
	return l, nil
}

// download writes the blob l to path atomically, from cache when it
// holds it, checking its size and SHA-256.
func download(ctx context.Context, repo *Repository, l ocispec.Descriptor, path, cache string) error {
	var store *oci.Store
	if cache != "" {
		s, err := oci.New(cache)
		if err != nil {
			return fmt.Errorf("install: open the cache %s: %w", cache, err)
		}
		store = s
		if ok, _ := store.Exists(ctx, l); ok {
			rc, err := store.Fetch(ctx, l)
			if err == nil {
				err = writeAtomic(path, rc, l)
				rc.Close()
				if err == nil {
					return nil
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
		return repo.wrap("download "+l.Digest.String(), err)
	}
	err = writeAtomic(path, stallGuard(rc, repo.stall, cancel), l)
	rc.Close()
	if cause := context.Cause(fctx); err != nil && errors.Is(cause, errStalled) {
		err = fmt.Errorf("%s: download %s: %w (nothing was installed)", repo.Source, l.Digest, cause)
	}
	if err != nil {
		if errors.Is(err, ErrTampered) {
			return fmt.Errorf("%s: %w", repo.Source, err)
		}
		return err
	}
	if store != nil {
		if f, err := os.Open(path); err == nil {
			store.Push(ctx, l, f) // best effort: a cache failure does not fail the install
			f.Close()
		}
	}
	return nil
}

// createTemp makes the temporary file writeAtomic writes; tests replace
// it to fail the write.
var createTemp = func(dir, pattern string) (io.WriteCloser, string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, "", err
	}
	return f, f.Name(), nil
}

// writeAtomic copies r to a temporary file beside path, checking it has
// l's size and digest, syncs it, makes it executable and renames it to
// path; on any failure it removes the temporary file.
func writeAtomic(path string, r io.Reader, l ocispec.Descriptor) (err error) {
	w, tmp, err := createTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	defer func() {
		if err != nil {
			w.Close()
			os.Remove(tmp)
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, l.Size+1))
	if err != nil {
		return fmt.Errorf("install: write %s: %w (nothing was installed)", path, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); n != l.Size || got != l.Digest.String() {
		return fmt.Errorf("%w: the binary %s downloaded as %d bytes with digest %s, the signed manifest says %d bytes, %s: a tampered or corrupt blob; nothing was installed", ErrTampered, filepath.Base(path), n, got, l.Size, l.Digest)
	}
	if f, ok := w.(*os.File); ok {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("install: sync %s: %w", tmp, err)
		}
		if err := f.Chmod(0o755); err != nil {
			return fmt.Errorf("install: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("install: write %s: %w (nothing was installed)", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	syncDir(filepath.Dir(path))
	return nil
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
