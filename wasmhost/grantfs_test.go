package wasmhost

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/plugkit/plugkit/internal/testutil"
)

// fsProbe runs testdata/fsguest with cfg's grants (interpreted: the file
// system does not depend on the engine) and returns its result for each
// operation: "ok ..." or "err ERRNO". The probe is built and compiled
// once per test binary (fsGuest); each call runs it with cfg's grants.
func fsProbe(t *testing.T, cfg Config, ops ...string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fr, compiled := fsGuestCompiled(t)
	// A Runtime for its grants only: it compiles nothing (no Close).
	fsc, closeFS, err := New(cfg).fsConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFS()
	var stdout, stderr bytes.Buffer
	mc := wazero.NewModuleConfig().WithName("").WithArgs(append([]string{"fsguest"}, ops...)...).
		WithStdout(&stdout).WithStderr(&stderr).WithFSConfig(fsc)
	mod, err := fr.rt.InstantiateModule(ctx, compiled, mc)
	if mod != nil {
		mod.Close(ctx)
	}
	var exit *sys.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 0) {
		t.Fatalf("fsguest: %v\n%s", err, stderr.Bytes())
	}
	got := make(map[string]string, len(ops))
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		for _, op := range ops {
			if rest, ok := strings.CutPrefix(line, op+" "); ok && (strings.HasPrefix(rest, "ok") || strings.HasPrefix(rest, "err")) {
				got[op] = rest
			}
		}
	}
	for _, op := range ops {
		if _, ok := got[op]; !ok {
			t.Fatalf("fsguest printed nothing for %s:\n%s\n%s", op, stdout.Bytes(), stderr.Bytes())
		}
	}
	return got
}

// fsGuest is testdata/fsguest built, and compiled by an interpreting
// Runtime of no grants (fsProbe gives each run its grants), once per test
// binary: its build and compile cost a probe most of its time.
var fsGuest struct {
	once     sync.Once
	r        *Runtime
	compiled wazero.CompiledModule
	err      error
}

// fsGuestCompiled is fsGuest, built and compiled at its first use.
func fsGuestCompiled(t *testing.T) (*Runtime, wazero.CompiledModule) {
	t.Helper()
	fsGuest.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		wasm := filepath.Join(testutil.TempDir(t), "fsguest.wasm")
		if fsGuest.err = testutil.BuildWasm(ctx, wasm, "./testdata/fsguest"); fsGuest.err != nil {
			return
		}
		module, err := os.ReadFile(wasm)
		if err != nil {
			fsGuest.err = err
			return
		}
		fsGuest.r = New(Config{Interpret: true})
		fsGuest.compiled, fsGuest.err = fsGuest.r.compile(ctx, module)
	})
	if fsGuest.err != nil {
		t.Fatal(fsGuest.err)
	}
	return fsGuest.r, fsGuest.compiled
}

// skipUnderWine skips a symbolic-link escape test under Wine, whose links
// Windows path resolution does not follow as a directory (a guest gets
// ENOTDIR or ENOENT there, never a file outside, but not the errno the
// test asserts): the escape is proved on unix hosts and real Windows.
func skipUnderWine(t *testing.T) {
	t.Helper()
	if testutil.UnderWine() {
		t.Skip("Wine's symbolic links are not followed as directories: the escape tests need unix or real Windows")
	}
}

// symlinkOrSkip makes the symbolic link, or skips the test on a host
// where this user cannot make one (Windows without the privilege).
func symlinkOrSkip(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		if runtime.GOOS == "windows" {
			t.Skipf("this host makes no symbolic links: %v", err)
		}
		t.Fatal(err)
	}
}

// escapeFixture is a host directory outside every grant, with a file
// the guest must neither read nor change, and the grants: rw (writable,
// at /rw) and ro (read-only, at /ro).
type escapeFixture struct {
	outside, secret, rw, ro string
	secretInfo              os.FileInfo
}

func newEscapeFixture(t *testing.T) *escapeFixture {
	base := testutil.TempDir(t)
	f := &escapeFixture{outside: filepath.Join(base, "outside"), rw: filepath.Join(base, "a", "b", "c", "rw"), ro: filepath.Join(base, "ro")}
	for _, d := range []string{f.outside, f.rw, f.ro} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.secret = filepath.Join(f.outside, "secret")
	if err := os.WriteFile(f.secret, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(f.secret, old, old); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.secretInfo, err = os.Stat(f.secret); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *escapeFixture) config() Config {
	return Config{Dirs: []Dir{{HostPath: f.rw, GuestPath: "/rw", Writable: true}, {HostPath: f.ro, GuestPath: "/ro"}}}
}

// untouched checks that the host's files outside the grants are as
// they were: the secret's content, mode and time, nothing added.
func (f *escapeFixture) untouched(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(f.secret)
	if err != nil || string(b) != "host secret" {
		t.Errorf("the host's file outside the grants: %q %v; want it untouched", b, err)
	}
	if fi, err := os.Stat(f.secret); err != nil || fi.Mode() != f.secretInfo.Mode() || !fi.ModTime().Equal(f.secretInfo.ModTime()) {
		t.Errorf("the host's file outside the grants changed: %v", err)
	}
	ents, _ := os.ReadDir(f.outside)
	if len(ents) != 1 {
		t.Errorf("the directory outside the grants holds %d entries; want only the secret", len(ents))
	}
}

// want checks each op's result starts with its want.
func want(t *testing.T, got map[string]string, cases [][2]string) {
	t.Helper()
	for _, c := range cases {
		if r := got[c[0]]; !strings.HasPrefix(r, c[1]) {
			t.Errorf("%s: %s; want %s", c[0], r, c[1])
		}
	}
}

// up is a relative symlink target that climbs past the file system's
// root from any grant.
var up = strings.Repeat("../", 40)

// TestGrantSymlinkEscape: a guest with one writable directory makes a
// symlink climbing out of it (and chains of them, and one in the middle
// of a path), then lists, reads, writes, changes, renames and links
// through it: every path through it fails with EPERM, nothing outside
// is listed, read or changed, and symlinks inside the grant still work.
func TestGrantSymlinkEscape(t *testing.T) {
	skipUnderWine(t)
	f := newEscapeFixture(t)
	symlinkOrSkip(t, "mine", filepath.Join(f.rw, "probe"))  // the guest's go through the host's os.Symlink
	out := path.Join("/rw/up", filepath.ToSlash(f.outside)) // the outside directory, through the link
	if runtime.GOOS == "windows" {
		out = "/rw/up/" + strings.TrimPrefix(filepath.ToSlash(f.outside), filepath.VolumeName(f.outside)+"/")
	}
	rel := strings.TrimPrefix(out, "/rw/")
	if err := os.WriteFile(filepath.Join(f.rw, "mine"), []byte("guest file"), 0o644); err != nil {
		t.Fatal(err)
	}
	ops := []string{
		"symlink:" + up + "=/rw/up",
		"readlink:/rw/up",
		"lstat:/rw/up",
		"list:/rw/up",
		"list:/rw/up/root",
		"stat:/rw/up",
		"read:" + out + "/secret",
		"read:/rw/up/etc/hostname",
		"write:" + out + "/escaped",
		"append:" + out + "/appended",
		"mkdir:" + out + "/newdir",
		"chmod:" + out + "/secret",
		"chtimes:" + out + "/secret",
		"truncate:" + out + "/secret",
		"remove:" + out + "/secret",
		// A chain of symlinks, each inside the grant.
		"symlink:up=/rw/chain1",
		"symlink:chain1=/rw/chain2",
		"read:" + strings.Replace(out, "/rw/up", "/rw/chain2", 1) + "/secret",
		// A directory symlink in the middle of a path.
		"symlink:" + rel + "=/rw/mid",
		"read:/rw/mid/secret",
		"list:/rw/mid",
		// Absolute targets.
		"symlink:/etc=/rw/abs",
		// Renames and links out through the link, and of the link.
		"rename:/rw/mine=" + out + "/moved",
		"link:/rw/mine=" + out + "/linked",
		"link:" + out + "/secret=/rw/stolen",
		"rename:/rw/up=/rw/up2",
		"read:" + strings.Replace(out, "/rw/up", "/rw/up2", 1) + "/secret",
		"link:/rw/up2=/rw/up3",
		"read:" + strings.Replace(out, "/rw/up", "/rw/up3", 1) + "/secret",
		// Inside the grant, symlinks work.
		"mkdir:/rw/real",
		"write:/rw/real/f",
		"symlink:real=/rw/inlink",
		"symlink:../mine=/rw/real/back",
		"read:/rw/inlink/f",
		"read:/rw/real/back",
		"write:/rw/inlink/g",
		"list:/rw/inlink",
		"stat:/rw/inlink",
	}
	got := fsProbe(t, f.config(), ops...)
	want(t, got, [][2]string{
		{"symlink:" + up + "=/rw/up", "ok"},
		{"readlink:/rw/up", "ok " + up},
		{"lstat:/rw/up", "ok L"},
		{"list:/rw/up", "err EPERM"},
		{"list:/rw/up/root", "err EPERM"},
		{"stat:/rw/up", "err EPERM"},
		{"read:" + out + "/secret", "err EPERM"},
		{"read:/rw/up/etc/hostname", "err EPERM"},
		{"write:" + out + "/escaped", "err EPERM"},
		{"append:" + out + "/appended", "err EPERM"},
		{"mkdir:" + out + "/newdir", "err EPERM"},
		{"chmod:" + out + "/secret", "err EPERM"},
		{"chtimes:" + out + "/secret", "err EPERM"},
		{"truncate:" + out + "/secret", "err EPERM"},
		{"remove:" + out + "/secret", "err EPERM"},
		{"symlink:up=/rw/chain1", "ok"},
		{"symlink:chain1=/rw/chain2", "ok"},
		{"read:" + strings.Replace(out, "/rw/up", "/rw/chain2", 1) + "/secret", "err EPERM"},
		{"symlink:" + rel + "=/rw/mid", "ok"},
		{"read:/rw/mid/secret", "err EPERM"},
		{"list:/rw/mid", "err EPERM"},
		{"symlink:/etc=/rw/abs", "err EPERM"},
		{"rename:/rw/mine=" + out + "/moved", "err EPERM"},
		{"link:/rw/mine=" + out + "/linked", "err EPERM"},
		{"link:" + out + "/secret=/rw/stolen", "err EPERM"},
		{"rename:/rw/up=/rw/up2", "ok"},
		{"read:" + strings.Replace(out, "/rw/up", "/rw/up2", 1) + "/secret", "err EPERM"},
		{"link:/rw/up2=/rw/up3", "ok"},
		{"read:" + strings.Replace(out, "/rw/up", "/rw/up3", 1) + "/secret", "err EPERM"},
		{"mkdir:/rw/real", "ok"},
		{"write:/rw/real/f", "ok"},
		{"symlink:real=/rw/inlink", "ok"},
		{"symlink:../mine=/rw/real/back", "ok"},
		{"read:/rw/inlink/f", `ok "guest was here"`},
		{"read:/rw/real/back", `ok "guest file"`},
		{"write:/rw/inlink/g", "ok"},
		{"list:/rw/inlink", "ok back,f,g"},
		{"stat:/rw/inlink", "ok d"},
	})
	f.untouched(t)
	if _, err := os.Stat(filepath.Join(f.rw, "mine")); err != nil {
		t.Errorf("the guest's file: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(f.rw, "stolen")); err == nil {
		t.Error("the guest linked the host's file into its directory")
	}
}

// TestGrantHostSymlinks: symlinks the host left in a grant, read-only or
// writable, absolute or relative, to a directory or a file outside, are
// not followed out; writes to a read-only grant fail with EROFS.
func TestGrantHostSymlinks(t *testing.T) {
	skipUnderWine(t)
	f := newEscapeFixture(t)
	relOut, err := filepath.Rel(f.ro, f.outside)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ro, "data"), []byte("ro data"), 0o644); err != nil {
		t.Fatal(err)
	}
	symlinkOrSkip(t, f.outside, filepath.Join(f.ro, "etc"))
	symlinkOrSkip(t, relOut, filepath.Join(f.ro, "rel"))
	symlinkOrSkip(t, f.secret, filepath.Join(f.ro, "secretlink"))
	symlinkOrSkip(t, "data", filepath.Join(f.ro, "datalink"))
	symlinkOrSkip(t, f.outside, filepath.Join(f.rw, "hostabs"))
	symlinkOrSkip(t, f.secret, filepath.Join(f.rw, "secretlink"))
	got := fsProbe(t, f.config(),
		"read:/ro/etc/secret", "list:/ro/etc", "read:/ro/rel/secret", "list:/ro/rel", "read:/ro/secretlink",
		"read:/ro/datalink", "readlink:/ro/etc",
		"write:/ro/new", "write:/ro/data", "mkdir:/ro/d", "remove:/ro/data", "chmod:/ro/data",
		"symlink:data=/ro/l", "rename:/ro/data=/ro/data2", "truncate:/ro/data",
		"read:/rw/hostabs/secret", "write:/rw/hostabs/escaped", "read:/rw/secretlink", "write:/rw/secretlink", "append:/rw/secretlink",
	)
	want(t, got, [][2]string{
		{"read:/ro/etc/secret", "err EPERM"},
		{"list:/ro/etc", "err EPERM"},
		{"read:/ro/rel/secret", "err EPERM"},
		{"list:/ro/rel", "err EPERM"},
		{"read:/ro/secretlink", "err EPERM"},
		{"read:/ro/datalink", `ok "ro data"`},
		{"readlink:/ro/etc", "ok " + filepath.ToSlash(f.outside)},
		{"write:/ro/new", "err EROFS"},
		{"write:/ro/data", "err EROFS"},
		{"mkdir:/ro/d", "err EROFS"},
		{"remove:/ro/data", "err EROFS"},
		{"chmod:/ro/data", "ok"}, // WASI has no chmod: Go's only stats the file
		{"symlink:data=/ro/l", "err EROFS"},
		{"rename:/ro/data=/ro/data2", "err EROFS"},
		{"truncate:/ro/data", "err EROFS"},
		{"read:/rw/hostabs/secret", "err EPERM"},
		{"write:/rw/hostabs/escaped", "err EPERM"},
		{"read:/rw/secretlink", "err EPERM"},
		{"write:/rw/secretlink", "err EPERM"},
		{"append:/rw/secretlink", "err EPERM"},
	})
	f.untouched(t)
	if b, err := os.ReadFile(filepath.Join(f.ro, "data")); err != nil || string(b) != "ro data" {
		t.Errorf("the read-only grant's file: %q %v", b, err)
	}
}

// TestGrantSwapDirForSymlink: the guest replaces a directory it used
// with a symlink out, between two calls: the second call does not follow
// it.
func TestGrantSwapDirForSymlink(t *testing.T) {
	skipUnderWine(t)
	f := newEscapeFixture(t)
	symlinkOrSkip(t, "d", filepath.Join(f.rw, "probe")) // the guest's go through the host's os.Symlink
	out := path.Join(strings.TrimSuffix(up, "/"), filepath.ToSlash(f.outside))
	if runtime.GOOS == "windows" {
		out = up + strings.TrimPrefix(filepath.ToSlash(f.outside), filepath.VolumeName(f.outside)+"/")
	}
	got := fsProbe(t, f.config(),
		"mkdir:/rw/d", "write:/rw/d/secret", "read:/rw/d/secret",
		"rename:/rw/d=/rw/d.old", "symlink:"+out+"=/rw/d",
		"read:/rw/d/secret", "list:/rw/d", "write:/rw/d/escaped",
	)
	want(t, got, [][2]string{
		{"read:/rw/d/secret", "err EPERM"},
		{"list:/rw/d", "err EPERM"},
		{"write:/rw/d/escaped", "err EPERM"},
	})
	f.untouched(t)
}

// TestGrantSwapRace: while the guest reads d/secret in its grant over
// and over, the host swaps d between a directory and a symlink to a
// directory outside (as a second guest or process sharing the grant
// could): the guest reads the file inside, or fails, and never reads the
// one outside. 500 reads (the interpreted guest under the race detector
// reads slowly: the host swaps many times during each) cover the
// interleavings 3000 did, in a sixth of the time.
func TestGrantSwapRace(t *testing.T) {
	skipUnderWine(t)
	f := newEscapeFixture(t)
	inside := filepath.Join(f.rw, "inside")
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inside, "secret"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, link := filepath.Join(f.rw, "d"), filepath.Join(f.rw, "link")
	symlinkOrSkip(t, f.outside, link)
	stop := make(chan struct{})
	swapped := make(chan int)
	go func() {
		n := 0
		defer func() { swapped <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// d is the directory, then the symlink, then neither.
			os.Rename(inside, d)
			os.Rename(d, inside)
			os.Rename(link, d)
			os.Rename(d, link)
			n++
		}
	}()
	got := fsProbe(t, f.config(), "readn:500=/rw/d/secret")
	close(stop)
	n := <-swapped
	if n == 0 {
		t.Fatal("the host never swapped the directory")
	}
	r := got["readn:500=/rw/d/secret"]
	if strings.Contains(r, "host secret") {
		t.Errorf("the guest read the host's file outside its grant through a swapped directory: %s", r)
	}
	t.Logf("the guest read: %s (the host swapped %d times)", r, n)
	f.untouched(t)
}

// BenchmarkGrantOpenRead: what a guest's open, 4 KiB read and close of a
// file three directories down costs the host, through a grant (os.Root)
// and through wazero's own directory file system, which follows symlinks
// out (the baseline).
func BenchmarkGrantOpenRead(b *testing.B) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b", "c"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "c", "file"), make([]byte, 4096), 0o644); err != nil {
		b.Fatal(err)
	}
	g, err := openGrant(Dir{HostPath: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer g.close()
	for _, c := range []struct {
		name string
		fs   experimentalsys.FS
	}{{"grant", g}, {"wazero-dirfs", sysfs.DirFS(dir)}} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 4096)
			for b.Loop() {
				f, errno := c.fs.OpenFile("a/b/c/file", experimentalsys.O_RDONLY, 0)
				if errno != 0 {
					b.Fatal(errno)
				}
				if n, errno := f.Read(buf); errno != 0 || n != len(buf) {
					b.Fatal(n, errno)
				}
				f.Close()
			}
		})
	}
}
