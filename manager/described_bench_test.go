package manager_test

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// BenchmarkStartDescribedFile is what checking the described SHA-256 on
// every start costs (a restart, a first start): Finder.Start of the
// example fs plugin (a real binary) from an entry with its SHA-256, as
// every start now is, against the same entry without it, as starts were
// before (nothing checked), and a plain SHA-256 of the file. Rounds
// interleave the two starts, in turns; each figure is the median of the
// rounds (-benchtime Nx).
func BenchmarkStartDescribedFile(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	path := testutil.GoBuild(ctx, b, filepath.Join(b.TempDir(), "fs"), "../examples/objectstore/plugins/fs")
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	// A file installed a second or more ago, as a plugin's file is: the
	// digest of one changed less than that ago is not remembered
	// (filehash.SHA256File), so each start would hash it.
	time.Sleep(time.Until(fi.ModTime().Add(1100 * time.Millisecond)))
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}}
	checked := finder.Describe(ctx, []string{path})[0]
	if checked.Err != nil {
		b.Fatal(checked.Err)
	}
	unchecked := checked
	unchecked.SHA256 = ""
	start := func(e manager.Entry) time.Duration {
		t := time.Now()
		c, err := finder.Start(ctx, e)
		took := time.Since(t)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
		return took
	}
	var withSum, without, hashes []time.Duration
	b.ResetTimer()
	for round := range b.N {
		if round%2 == 0 {
			withSum, without = append(withSum, start(checked)), append(without, start(unchecked))
		} else {
			without, withSum = append(without, start(unchecked)), append(withSum, start(checked))
		}
		hashes = append(hashes, hashFile(b, path))
	}
	b.StopTimer()
	ms := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(withSum), "checked-ms")
	b.ReportMetric(ms(without), "unchecked-ms")
	b.ReportMetric(ms(withSum)/ms(without), "checked/unchecked")
	b.ReportMetric(ms(hashes), "sha256-ms")
	b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
	b.ReportMetric(0, "ns/op")
}

// hashFile is the time to read and SHA-256 the file at path.
func hashFile(b *testing.B, path string) time.Duration {
	t := time.Now()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(sha256.New(), f); err != nil {
		b.Fatal(err)
	}
	return time.Since(t)
}
