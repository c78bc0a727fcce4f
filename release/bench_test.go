package release

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/plugkit/plugkit/examples/objectstore"
)

// BenchmarkInstallVsRawPull measures, in the same iterations, three ways
// of fetching the ~19 MB fs plugin from a loopback registry: a raw pull
// of its blob into a file with its SHA-256; Install's transfer (the
// signature check, the manifest, the download with its SHA-256, fsync
// and rename); and the whole Install, which also starts the binary for
// its Describe answer. It reports each and their ratios to the raw pull
// (the goal: <= 1.3).
func BenchmarkInstallVsRawPull(b *testing.B) {
	repo := openRegistry(b, "plugins/fs", nil)
	ctx := testCtx(b)
	key, pub := newKey(b)
	rel, err := Push(ctx, repo, Publication{Dir: releaseDir(b, pluginBinary(b, "fs")), Version: "2.1.0", Key: key, Cookie: objectstore.Cookie})
	if err != nil {
		b.Fatal(err)
	}
	layer, err := binaryLayer(ctx, repo, rel, here)
	if err != nil {
		b.Fatal(err)
	}
	var raw, transfer, inst time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		start := time.Now()
		rawPull(b, repo, layer, filepath.Join(dir, "raw"))
		raw += time.Since(start)
		start = time.Now()
		if err := Verify(ctx, repo, rel.Digest, pub); err != nil {
			b.Fatal(err)
		}
		l, err := binaryLayer(ctx, repo, rel, here)
		if err != nil {
			b.Fatal(err)
		}
		if err := download(ctx, repo, l, filepath.Join(dir, l.Annotations[ocispec.AnnotationTitle]), ""); err != nil {
			b.Fatal(err)
		}
		transfer += time.Since(start)
		start = time.Now()
		if _, err := Install(ctx, repo, rel, Target{Dir: filepath.Join(dir, "plugins"), Keys: pub, Cookie: objectstore.Cookie}); err != nil {
			b.Fatal(err)
		}
		inst += time.Since(start)
	}
	b.ReportMetric(float64(raw.Milliseconds())/float64(b.N), "raw-ms/op")
	b.ReportMetric(float64(transfer.Milliseconds())/float64(b.N), "transfer-ms/op")
	b.ReportMetric(float64(inst.Milliseconds())/float64(b.N), "install-ms/op")
	b.ReportMetric(float64(transfer)/float64(raw), "transfer/raw")
	b.ReportMetric(float64(inst)/float64(raw), "install/raw")
}

// rawPull downloads the blob into path and checks its SHA-256: the
// floor an install is measured against.
func rawPull(b *testing.B, repo *Repository, l ocispec.Descriptor, path string) {
	rc, err := repo.target.Fetch(testCtx(b), l)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), rc); err != nil {
		b.Fatal(err)
	}
	if "sha256:"+hex.EncodeToString(h.Sum(nil)) != l.Digest.String() {
		b.Fatal("digest mismatch")
	}
}
