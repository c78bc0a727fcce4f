package release

import (
	"bufio"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/registrytest"
	"github.com/plugkit/plugkit/internal/testutil"
)

// The measurement's child process reads its scenario from these.
const (
	measureEnv       = "PLUGKIT_MEASURE_CHILD" // SOURCE
	measureKeyEnv    = "PLUGKIT_MEASURE_KEY"   // the trusted key's PEM file
	measureMajorsEnv = "PLUGKIT_MEASURE_MAJOR"
)

// TestHostileRegistryCost measures, in a child process each, what
// resolving and installing from each hostile registry of the issue costs:
// the child's peak RSS (VmHWM) and the bytes it wrote (wchar of
// /proc/self/io: the files it wrote, and its few requests), within 60 s.
// It is a measurement, not a check, and runs only when asked:
//
//	PLUGKIT_MEASURE=1 go test -count=1 -run TestHostileRegistryCost -v ./release/
func TestHostileRegistryCost(t *testing.T) {
	if src := os.Getenv(measureEnv); src != "" {
		measureChild(t, src)
		return
	}
	if os.Getenv("PLUGKIT_MEASURE") == "" || runtime.GOOS != "linux" {
		t.Skip("a measurement: set PLUGKIT_MEASURE=1 to run it (Linux)")
	}
	_, pub := newKey(t)
	scenarios := []struct {
		name  string
		major string
		start func(t *testing.T) (source string, pub crypto.PublicKey)
	}{
		{"endless tag pages of 1000 tags", "1", func(t *testing.T) (string, crypto.PublicKey) {
			var pages atomic.Int64
			return hostileRegistry(t, Options{}, endlessTags(1000, &pages)).Source, pub[0]
		}},
		{"150 tags of a 3.9 MB index", "2", func(t *testing.T) (string, crypto.PublicKey) {
			var served atomic.Int64
			return hostileRegistry(t, Options{}, manyIndexes(newFakeRelease(t, fakeDescription("1.0.0", 2), 1000, 3_900_000, 8), 150, &served)).Source, pub[0]
		}},
		{"unsigned 10 GB layer, signature held back 20 s", "2", func(t *testing.T) (string, crypto.PublicKey) {
			var gets atomic.Int64
			return hostileRegistry(t, Options{}, unsignedHugeRelease(newFakeRelease(t, fakeDescription("2.1.0", 2), 10<<30, 0, 0), func(r *http.Request) {
				select {
				case <-time.After(20 * time.Second):
				case <-r.Context().Done():
				}
			}, &gets)).Source, pub[0]
		}},
		{"signed 1.3.0 served as 9.0.0", "1", func(t *testing.T) (string, crypto.PublicKey) {
			reg := registrytest.Start(t, registrytest.Options{})
			repo, err := Open(reg.Host+"/acme/objectstore", Options{PlainHTTP: true})
			if err != nil {
				t.Fatal(err)
			}
			key, pub := newKey(t)
			dir := releaseDir(t, pluginBinary(t, "memory")) // built before the push's deadline starts
			old, err := Push(testCtx(t), repo, Publication{Dir: dir, Version: "1.3.0", Key: key, Cookie: objectstore.Cookie})
			if err != nil {
				t.Fatal(err)
			}
			if err := repo.target.Tag(testCtx(t), ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: old.Digest, Size: int64(len(fetchIndex(t, repo, old)))}, "9.0.0"); err != nil {
				t.Fatal(err)
			}
			return repo.Source, pub[0]
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			source, pub := sc.start(t)
			der, err := x509.MarshalPKIXPublicKey(pub)
			if err != nil {
				t.Fatal(err)
			}
			keyFile := filepath.Join(testutil.TempDir(t), "release.pub")
			if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostileRegistryCost$", "-test.v")
			cmd.Env = append(os.Environ(), measureEnv+"="+source, measureKeyEnv+"="+keyFile, measureMajorsEnv+"="+sc.major)
			out, _ := cmd.CombinedOutput()
			for _, l := range strings.Split(string(out), "\n") {
				if strings.Contains(l, "MEASURED") {
					t.Log(strings.TrimSpace(l))
				}
			}
		})
	}
}

// measureChild resolves and installs from source within 60 s and prints
// the outcome, its peak RSS and the bytes it wrote.
func measureChild(t *testing.T, source string) {
	start := time.Now()
	outcome := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		repo, err := Open(source, Options{PlainHTTP: true})
		if err != nil {
			return err.Error()
		}
		keys, err := LoadPublicKeys(os.Getenv(measureKeyEnv))
		if err != nil {
			return err.Error()
		}
		major := 1
		fmt.Sscan(os.Getenv(measureMajorsEnv), &major)
		rel, err := Resolve(ctx, repo, Selection{Requirement: compat.Requirement{Kind: objectstore.Kind, Majors: []int{major}}})
		if err != nil {
			return "resolve: " + err.Error()
		}
		inst, err := Install(ctx, repo, rel, Target{Dir: testutil.TempDir(t), Keys: keys, Cookie: objectstore.Cookie})
		if err != nil {
			return "install: " + err.Error()
		}
		return "installed v" + inst.Release.Version
	}()
	if len(outcome) > 300 {
		outcome = outcome[:300] + "..."
	}
	fmt.Printf("MEASURED peak RSS %s, wrote %s, %.1f s: %s\n", procField("/proc/self/status", "VmHWM:"), procField("/proc/self/io", "wchar:")+" bytes", time.Since(start).Seconds(), outcome)
}

// procField returns the value of the line of file that starts with key.
func procField(file, key string) string {
	f, err := os.Open(file)
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
