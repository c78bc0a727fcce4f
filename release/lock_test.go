package release

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// TestLockRecordsEveryPlatformAndPinsTheManager locks a release of two
// platforms, checks the lock file round-trips, that --platform adds a
// platform published later, and that its Pins make the manager refuse a
// swapped binary and accept the installed one.
func TestLockRecordsEveryPlatformAndPinsTheManager(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	rel, _, pub := pushFS(t, repo, "darwin/arm64", "windows/amd64")
	lp, err := LockRelease(ctx, repo, rel, pub, "~> 2.0", []string{here}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lp.Binaries) != 1 {
		t.Fatalf("locked %v, want this platform only", lp.Binaries)
	}
	lp, err = LockRelease(ctx, repo, rel, pub, "", []string{"darwin/arm64"}, &lp)
	if err != nil {
		t.Fatal(err)
	}
	if len(lp.Binaries) != 2 || lp.Constraint != "~> 2.0" {
		t.Fatalf("after --platform darwin/arm64: %+v", lp)
	}
	if _, err := LockRelease(ctx, repo, rel, pub, "", []string{"plan9/386"}, &lp); err == nil || !strings.Contains(err.Error(), "no binary for plan9/386") {
		t.Errorf("locking a platform the release lacks: %v", err)
	}
	var l Lock
	l.Set(lp)
	path := filepath.Join(testutil.TempDir(t), "plugkit.lock")
	if err := l.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Bytes()) != string(l.Bytes()) {
		t.Fatalf("the lock file does not round-trip:\n%s\n---\n%s", l.Bytes(), back.Bytes())
	}
	for _, want := range []string{"binary darwin/arm64 objectstore-fs" + exe() + " sha256:", "binary " + here + " objectstore-fs" + exe() + " sha256:" + fileSHA(t, pluginBinary(t, "fs")), `constraint "~> 2.0"`, "index " + rel.Digest.String()} {
		if !strings.Contains(string(l.Bytes()), want) {
			t.Errorf("lock file lacks %q:\n%s", want, l.Bytes())
		}
	}

	dir := testutil.TempDir(t)
	if _, err := Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie, Locked: back.Find(repo.Source)}); err != nil {
		t.Fatal(err)
	}
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}, Pins: back.Pins()}
	if b := finder.Describe(ctx, []string{filepath.Join(dir, "objectstore-fs"+exe())})[0]; b.Err != nil {
		t.Fatalf("the manager refuses the locked binary: %v", b.Err)
	}
	writeFile(t, filepath.Join(dir, "objectstore-fs"+exe()), readFile(t, pluginBinary(t, "memory")), 0o755)
	if b := finder.Describe(ctx, []string{filepath.Join(dir, "objectstore-fs"+exe())})[0]; b.Err == nil {
		t.Fatal("the manager ran a binary that differs from the locked one")
	}
}

// TestInstallWithLockRefusesMismatch checks install with a lock file
// refuses a release whose index or binary digest differs from the locked
// one, and installs nothing.
func TestInstallWithLockRefusesMismatch(t *testing.T) {
	parallel(t)
	repo := openRegistry(t, "plugins/fs", nil)
	ctx := testCtx(t)
	rel, _, pub := pushFS(t, repo)
	lp, err := LockRelease(ctx, repo, rel, pub, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wrongBinary := lp
	wrongBinary.Binaries = []LockedBinary{{Platform: here, Name: "objectstore-fs", Digest: digest.FromString("another build")}}
	wrongIndex := lp
	wrongIndex.Index = digest.FromString("another index")
	noPlatform := lp
	noPlatform.Binaries = []LockedBinary{{Platform: "plan9/386", Name: "objectstore-fs", Digest: digest.FromString("x")}}
	for name, tc := range map[string]struct {
		locked LockedPlugin
		want   string
	}{
		"binary":   {wrongBinary, "the lock file has " + digest.FromString("another build").String()},
		"index":    {wrongIndex, "the tag was moved"},
		"platform": {noPlatform, "no digest for " + here},
	} {
		dir := testutil.TempDir(t)
		_, err := Install(ctx, repo, rel, Target{Dir: dir, Keys: pub, Cookie: objectstore.Cookie, Locked: &tc.locked})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
		if name != "platform" && !errors.Is(err, ErrLockMismatch) {
			t.Errorf("%s: %v is not ErrLockMismatch", name, err)
		}
		assertOnly(t, dir)
	}
}

// TestParseLockNamesTheLine feeds hand-mangled lock files to ParseLock:
// each error names the file and the line.
func TestParseLockNamesTheLine(t *testing.T) {
	parallel(t)
	const good = "lock-version 1\n\nplugin r.example/fs\n\tversion 2.1.0\n\tindex sha256:" + hex64 + "\n\tbinary linux/amd64 fs sha256:" + hex64 + "\n"
	if _, err := ParseLock("plugkit.lock", []byte(good)); err != nil {
		t.Fatalf("a good lock file: %v", err)
	}
	for _, tc := range []struct{ text, want string }{
		{"plugin r.example/fs\n", "plugkit.lock:1: a lock file starts with lock-version 1"},
		{"lock-version 7\n", "plugkit.lock:1: lock-version \"7\""},
		{strings.Replace(good, "index sha256:"+hex64, "index sha256:nothex", 1), "plugkit.lock:5: index:"},
		{strings.Replace(good, "binary linux/amd64 fs", "binary linux-amd64 fs", 1), "plugkit.lock:6: want binary OS/ARCH NAME"},
		{strings.Replace(good, "\tversion 2.1.0", "\tversoin 2.1.0", 1), "plugkit.lock:4: unknown keyword \"versoin\""},
		{good + "plugin r.example/fs\n", "plugkit.lock:7: plugin r.example/fs is listed twice"},
		{"lock-version 1\n  version 1.0.0\n", "plugkit.lock:2: \"version\" comes before any plugin line"},
		{good + "\tconstraint ~> 2.0\n", "plugkit.lock:7: want constraint \"QUOTED\""},
		{"lock-version 1\nplugin r.example/fs\n", "plugkit.lock:2: plugin r.example/fs lacks its version line"},
		{strings.Replace(good, "\tindex sha256:"+hex64+"\n", "", 1), "plugkit.lock:3: plugin r.example/fs lacks its index line"},
		{good + "\tbinary linux/amd64 fs sha256:" + strings.Repeat("f", 64) + "\n", "plugkit.lock:7: plugin r.example/fs has a second binary line for linux/amd64"},
		{good + "\tversion 2.2.0\n", "plugkit.lock:7: plugin r.example/fs has a second version line"},
	} {
		_, err := ParseLock("plugkit.lock", []byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.text, err, tc.want)
		}
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
