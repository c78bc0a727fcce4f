package release

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/file"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/registrytest"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestPullOfAWholeReleaseWritesItsDirectory: `oras pull` of a release
// without --platform (oras-go's file store, which oras pull writes
// through) refused a release whose layers all had one title ("duplicate
// name"); each layer's title is now OS_ARCH/NAME, so the pull writes the
// directory release push took, and install still names the binary NAME.
func TestPullOfAWholeReleaseWritesItsDirectory(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "acme/fs", nil)
	ctx := testCtx(t)
	rel, _, pub := pushFS(t, repo, "darwin/arm64", "windows/amd64")
	dir := testutil.TempDir(t)
	store, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := oras.Copy(ctx, repo.target, rel.Version, store, rel.Version, oras.DefaultCopyOptions); err != nil {
		t.Fatalf("pull of the whole release: %v", err)
	}
	name := filepath.Base(pluginBinary(t, "fs"))
	for _, p := range []string{here, "darwin/arm64", "windows/amd64"} {
		if _, err := os.Stat(filepath.Join(dir, platformDir(p), name)); err != nil {
			t.Errorf("the pull wrote no %s binary: %v", p, err)
		}
	}
	inst, err := Install(ctx, repo, rel, Target{Dir: testutil.TempDir(t), Keys: pub, Cookie: objectstore.Cookie})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(inst.Path) != name {
		t.Errorf("installed as %s, want %s", filepath.Base(inst.Path), name)
	}
}

// TestCopyWithReferrersCarriesTheSignature: a copy of a release with its
// referrers (oras cp -r, which copies through oras-go's ExtendedCopy) to
// another repository, without the .sig tag, installs there: the bundle
// referrer travels with it.
func TestCopyWithReferrersCarriesTheSignature(t *testing.T) {
	parallel(t)
	src := openRegistry(t, "acme/fs", nil)
	ctx := testCtx(t)
	rel, _, pub := pushFS(t, src)
	dst := openRegistry(t, "mirror/fs", nil)
	if _, err := oras.ExtendedCopy(ctx, src.target, rel.Version, dst.target, rel.Version, oras.DefaultExtendedCopyOptions); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.target.Resolve(ctx, signatureTag(rel.Digest)); err == nil {
		t.Fatal("the copy took the .sig tag too: the test proves nothing")
	}
	if err := Verify(ctx, dst, rel.Digest, pub); err != nil {
		t.Fatalf("the copy's signature: %v", err)
	}
}

// TestWrongPasswordSaysWhatToDo: a registry that refuses the credentials
// (401) is answered with what to check, not a bare status.
func TestWrongPasswordSaysWhatToDo(t *testing.T) {
	parallel(t)
	reg := registrytest.Start(t, registrytest.Options{Username: "ci", Password: "s3cret"})
	repo, err := Open(reg.Host+"/plugins/fs", Options{PlainHTTP: true, Credential: auth.StaticCredential(reg.Host, auth.Credential{Username: "ci", Password: "wrong"})})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Fetch(testCtx(t), repo, "2.1.0")
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "refused the credentials") || !strings.Contains(err.Error(), "PLUGKIT_REGISTRY_PASSWORD") {
		t.Fatalf("got %v, want an error saying the credentials were refused and what to check", err)
	}
}

// TestInstallOfAReleaseTitledTheOldWay: a release pushed before
// AnnotationFileName, whose layer's title is the file name, installs
// under that name.
func TestInstallOfAReleaseTitledTheOldWay(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "acme/fs", nil)
	ctx := testCtx(t)
	rel, key, pub := pushFS(t, repo)
	// Rewrite this platform's manifest as push wrote it before: the
	// title alone, the file name.
	md := rel.manifests[here]
	raw, err := fetchSmall(ctx, repo, md)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	name := fileName(m.Layers[0])
	m.Layers[0].Annotations = map[string]string{ocispec.AnnotationTitle: name}
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	old := ocispec.Descriptor{MediaType: md.MediaType, ArtifactType: md.ArtifactType, Digest: digest.FromBytes(raw), Size: int64(len(raw)), Platform: md.Platform}
	if err := pushBytes(ctx, repo, old, raw); err != nil {
		t.Fatal(err)
	}
	meta, err := protojson.Marshal(rel.Description)
	if err != nil {
		t.Fatal(err)
	}
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactType,
		Manifests: []ocispec.Descriptor{old}, Annotations: map[string]string{AnnotationDescribe: string(meta), ocispec.AnnotationVersion: rel.Version}}
	tagIndex(t, repo, idx, rel.Version)
	if rel, err = Fetch(ctx, repo, rel.Version); err != nil {
		t.Fatal(err)
	}
	if err := Sign(ctx, repo, rel.Digest, key); err != nil {
		t.Fatal(err)
	}
	if l, err := binaryLayer(ctx, repo, rel, here); err != nil || l.Annotations[AnnotationFileName] != "" || l.Annotations[ocispec.AnnotationTitle] != name {
		t.Fatalf("the layer is not titled the old way: %v, %v", l.Annotations, err)
	}
	inst, err := Install(ctx, repo, rel, Target{Dir: testutil.TempDir(t), Keys: pub, Cookie: objectstore.Cookie})
	if err != nil {
		t.Fatalf("install of a release titled the old way: %v", err)
	}
	if filepath.Base(inst.Path) != name {
		t.Errorf("installed as %s, want %s", filepath.Base(inst.Path), name)
	}
}

// TestMirrorCarriesReferrerSignatures: a release signed only by a
// referrer (cosign v3's way) mirrors into an image layout, and installs
// from there.
func TestMirrorCarriesReferrerSignatures(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "acme/fs", nil)
	ctx := testCtx(t)
	rel, _, pub := pushFS(t, repo)
	dropTagSignature(t, repo, rel.Digest)
	mirror, _ := mirrorTo(t, repo, rel.Version)
	if err := Verify(ctx, mirror, rel.Digest, pub); err != nil {
		t.Fatalf("the mirror's signature: %v", err)
	}
	if _, err := Install(ctx, mirror, rel, Target{Dir: testutil.TempDir(t), Keys: pub, Cookie: objectstore.Cookie}); err != nil {
		t.Fatalf("install from the mirror: %v", err)
	}
}
