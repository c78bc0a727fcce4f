package release

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/testutil"
)

// BenchmarkInstallVsRawPull measures, in the same iterations, a raw pull
// of the ~19 MB fs plugin's blob from a loopback registry into a file
// with its SHA-256, and the whole Install of the same plugin: the lock,
// the signature check beside the platform manifest and the download with
// its SHA-256 and size check (fetched), the start of the binary for its
// Describe answer beside the fsync (described), and the rest of the
// fsync with the rename (sync-rename). It
// reports each, and the ratio of the install to the raw pull (the issue's
// goal: <= 1.3).
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
	var raw, inst time.Duration
	steps := map[string]time.Duration{}
	var start time.Time
	timed := &installHooks{stepDone: func(step string) { steps[step] += time.Since(start) }}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := testutil.TempDir(b)
		start = time.Now()
		rawPull(b, repo, layer, filepath.Join(dir, "raw"))
		raw += time.Since(start)
		start = time.Now()
		if _, err := Install(ctx, repo, rel, Target{Dir: filepath.Join(dir, "plugins"), Keys: pub, Cookie: objectstore.Cookie, hooks: timed}); err != nil {
			b.Fatal(err)
		}
		inst += time.Since(start)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(raw), "raw-ms/op")
	b.ReportMetric(ms(steps["fetched"]), "fetched-ms/op")
	b.ReportMetric(ms(steps["described"]-steps["fetched"]), "describe-ms/op")
	b.ReportMetric(ms(inst-steps["described"]), "sync-rename-ms/op")
	b.ReportMetric(ms(inst), "install-ms/op")
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

// BenchmarkVerify measures Verify of a release signed under the .sig tag
// (cosign v2's way), of one signed only by a sigstore bundle referrer
// (cosign v3's way), and the worst a registry's referrers may cost within
// the default bounds: DefaultMaxReferrers bundles of just under
// DefaultMaxSignatureBytes each, by keys not trusted, every one read and
// checked before ErrUntrustedKey.
//
//	go test -run '^$' -bench BenchmarkVerify -benchtime 5x ./release/
func BenchmarkVerify(b *testing.B) {
	repo := openRegistry(b, "plugins/fs", nil)
	ctx := testCtx(b)
	key, pub := newKey(b)
	tagged := pushUnsigned(b, repo, "fs", "2.1.0", fakeDescription("2.1.0", 1), false)
	if err := Sign(ctx, repo, tagged.Digest, key); err != nil {
		b.Fatal(err)
	}
	bundled := pushUnsigned(b, repo, "memory", "2.1.1", fakeDescription("2.1.1", 1), false)
	if err := Sign(ctx, repo, bundled.Digest, key); err != nil {
		b.Fatal(err)
	}
	dropTagSignature(b, repo, bundled.Digest)
	worst := pushUnsigned(b, repo, "fs", "2.1.2", fakeDescription("2.1.2", 1), false)
	index := indexOf(b, repo, worst)
	for range DefaultMaxReferrers {
		raw, _ := cosignBundle(b, worst.Digest)
		raw = append(raw, bytes.Repeat([]byte(" "), DefaultMaxSignatureBytes-len(raw))...)
		attach(b, repo, index, MediaTypeBundle, MediaTypeBundle, raw, nil)
	}
	for _, c := range []struct {
		name string
		d    digest.Digest
		want error
	}{{"sig-tag", tagged.Digest, nil}, {"bundle-referrer", bundled.Digest, nil}, {"worst-128-referrers", worst.Digest, ErrUntrustedKey}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() { // the registry runs in this process: B/op would count its work too

				if err := Verify(ctx, repo, c.d, pub); !errors.Is(err, c.want) {
					b.Fatalf("got %v, want %v", err, c.want)
				}
			}
		})
	}
}
