package release

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/internal/registrytest"
	"github.com/plugkit/plugkit/internal/testpki"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestResolveAmongManyReleasesDownloadsNoBinary publishes 100 releases
// and checks Resolve reads one index per release and fetches no blob.
func TestResolveAmongManyReleasesDownloadsNoBinary(t *testing.T) {
	parallel(t)
	var c counter
	repo := openRegistry(t, "plugins/many", &c)
	ctx := testCtx(t)
	dir := testutil.TempDir(t)
	// Pushed eight at a time: the registry syncs each file it stores to
	// disk, and one push after another waits out every sync in turn.
	errs := make([]error, 100)
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8)
	for i := range errs {
		sub := filepath.Join(dir, fmt.Sprint(i), "linux_amd64")
		writeFile(t, filepath.Join(sub, "plugin"), []byte(fmt.Sprintf("binary %d", i)), 0o755)
		bins, err := scanDir(filepath.Dir(sub))
		if err != nil {
			t.Fatal(err)
		}
		v := fmt.Sprintf("%d.%d.0", 1+i/10, i%10)
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			_, errs[i] = pushRelease(ctx, repo, v, bins, fakeDescription(v, uint32(1+i/10)), false)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	c.blobGets.Store(0)
	c.manifestGets.Store(0)
	rel, err := Resolve(ctx, repo, Selection{Requirement: compat.Requirement{Kind: objectstore.Kind, Majors: []int{3}}, Constraint: "< 3.5"})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != "3.4.0" {
		t.Errorf("resolved %s, want 3.4.0", rel.Version)
	}
	if n := c.blobGets.Load(); n != 0 {
		t.Errorf("Resolve fetched %d blobs, want none", n)
	}
	if n := c.manifestGets.Load(); n != 100 {
		t.Errorf("Resolve fetched %d manifests, want one index per release (100)", n)
	}
}

// TestInstallFromMirrorAndCacheOffline mirrors a release into an OCI
// image-layout directory and installs from it with no registry; a second
// install with a cache that holds the binary fetches no blob.
func TestInstallFromMirrorAndCacheOffline(t *testing.T) {
	parallel(t)
	var c counter
	repo := openRegistry(t, "plugins/fs", &c)
	ctx := testCtx(t)
	rel, _, pub := pushFS(t, repo)
	cache := testutil.TempDir(t)
	c.blobGets.Store(0)
	if _, err := Install(ctx, repo, rel, Target{Dir: testutil.TempDir(t), Keys: pub, Cookie: objectstore.Cookie, Cache: cache}); err != nil {
		t.Fatal(err)
	}
	first := c.blobGets.Load()
	if _, err := Install(ctx, repo, rel, Target{Dir: testutil.TempDir(t), Keys: pub, Cookie: objectstore.Cookie, Cache: cache}); err != nil {
		t.Fatal(err)
	}
	// The first install fetches the binary, its manifest's config is not
	// read; the signature payload is a blob too.
	if second := c.blobGets.Load() - first; second >= first || first-second != 1 {
		t.Errorf("blob fetches: %d without the cache, %d with it; want exactly the binary's fetch saved", first, second)
	}
	// A corrupt cache entry is not installed: the binary comes from the
	// registry again.
	cached := filepath.Join(cache, "blobs", "sha256", fileSHA(t, pluginBinary(t, "fs")))
	if err := os.WriteFile(cached, []byte("corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	inst, err := Install(ctx, repo, rel, Target{Dir: testutil.TempDir(t), Keys: pub, Cookie: objectstore.Cookie, Cache: cache})
	if err != nil {
		t.Fatalf("install with a corrupt cache entry: %v", err)
	}
	if fileSHA(t, inst.Path) != fileSHA(t, pluginBinary(t, "fs")) {
		t.Fatal("installed the corrupt cache entry")
	}

	_, layout := mirrorTo(t, repo, "2.1.0")
	offline, err := Open(LayoutPrefix+layout, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := c.all.Load()
	mrel, err := Resolve(ctx, offline, Selection{Requirement: compat.Requirement{Kind: objectstore.Kind, Majors: []int{2}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := testutil.TempDir(t)
	inst, err = Install(ctx, offline, mrel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie})
	if err != nil {
		t.Fatal(err)
	}
	if c.all.Load() != before {
		t.Errorf("the install from the mirror made %d registry requests", c.all.Load()-before)
	}
	if mrel.Digest != rel.Digest || fileSHA(t, inst.Path) != fileSHA(t, pluginBinary(t, "fs")) {
		t.Errorf("the mirror's release differs from the registry's")
	}
}

// TestRegistryWithTLSAndBasicAuth publishes to and installs from a
// registry that serves HTTPS and requires htpasswd credentials, and
// checks anonymous access is refused with an error naming the registry.
func TestRegistryWithTLSAndBasicAuth(t *testing.T) {
	parallel(t)
	ca, err := testpki.NewCA("registry CA")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue("registry", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pair.TLS()
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t, registrytest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}, Username: "ci", Password: "s3cret"})
	opts := Options{TLS: &tls.Config{RootCAs: ca.Pool()}, Credential: auth.StaticCredential(reg.Host, auth.Credential{Username: "ci", Password: "s3cret"})}
	repo, err := Open(reg.Host+"/plugins/fs", opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	_, _, pub := pushFS(t, repo)
	rel, err := Resolve(ctx, repo, Selection{Requirement: compat.Requirement{Kind: objectstore.Kind, Majors: []int{1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Install(ctx, repo, rel, Target{Dir: testutil.TempDir(t), Keys: pub, Cookie: objectstore.Cookie}); err != nil {
		t.Fatal(err)
	}
	anon, err := Open(reg.Host+"/plugins/fs", Options{TLS: opts.TLS})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Fetch(ctx, anon, "2.1.0")
	if err == nil || !strings.Contains(err.Error(), reg.Host) || !strings.Contains(err.Error(), "asks for credentials") {
		t.Fatalf("anonymous: got %v, want a request for credentials naming %s", err, reg.Host)
	}
}
