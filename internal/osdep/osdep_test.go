package osdep

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// Both systems' decisions are checked on every system.
func TestExecutable(t *testing.T) {
	cases := []struct {
		mode     fs.FileMode
		execBits bool
		want     bool
	}{
		{0o755, true, true},
		{0o700, true, true},
		{0o001, true, true},
		{0o644, true, false},
		{0o600, true, false},
		{0o644, false, true}, // Windows: no exec bits to ask for
		{0o444, false, true},
	}
	for _, c := range cases {
		if got := executable(c.mode, c.execBits); got != c.want {
			t.Errorf("executable(%v, execBits=%v) = %v, want %v", c.mode, c.execBits, got, c.want)
		}
	}
	if got := Executable(0o644); got == ExecBits {
		t.Errorf("Executable(0644) = %v on a system whose ExecBits is %v", got, ExecBits)
	}
}

func TestHasDir(t *testing.T) {
	cases := []struct {
		path, seps string
		want       bool
	}{
		{"plugin", "/", false},
		{"./plugin", "/", true},
		{"/usr/lib/p", "/", true},
		{`dir\plugin.exe`, "/", false}, // a backslash is a name character on unix
		{`dir\plugin.exe`, `/\:`, true},
		{`C:plugin.exe`, `/\:`, true},
		{`plugin.exe`, `/\:`, false},
		{"dir/plugin.exe", `/\:`, true},
	}
	for _, c := range cases {
		if got := hasDir(c.path, c.seps); got != c.want {
			t.Errorf("hasDir(%q, %q) = %v, want %v", c.path, c.seps, got, c.want)
		}
	}
}

// A second open file of the same path cannot take a held lock, and can
// once the holder closes.
func TestTryLock(t *testing.T) {
	a, b := twoOpenFiles(t)
	if err := TryLock(a); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	if err := TryLock(b); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock while held = %v, want ErrLocked", err)
	}
	a.Close()
	if err := TryLock(b); err != nil {
		t.Fatalf("lock after the holder closed: %v", err)
	}
}

// twoOpenFiles opens one new file twice, for two holders of its lock; the
// test's end closes both.
func twoOpenFiles(t *testing.T) (a, b *os.File) {
	t.Helper()
	path := filepath.Join(testutil.TempDir(t), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	return open(), open()
}

// Lock waits for a held lock: it gives up when its context ends, saying
// the file is locked, and takes the lock once the holder closes.
func TestLock(t *testing.T) {
	a, b := twoOpenFiles(t)
	if err := Lock(context.Background(), a); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := Lock(ctx, b); !errors.Is(err, ErrLocked) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held, until a deadline = %v, want ErrLocked and the deadline", err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done <- Lock(ctx, b)
	}()
	time.Sleep(30 * time.Millisecond) // b is waiting
	a.Close()
	if err := <-done; err != nil {
		t.Fatalf("lock after the holder closed: %v", err)
	}
}

// OpenNoFollow opens a regular file, refuses a symbolic link to it, and
// creates a missing file when asked to.
func TestOpenNoFollow(t *testing.T) {
	dir := testutil.TempDir(t)
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenNoFollow(file, os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("regular file: %v", err)
	}
	f.Close()
	link := filepath.Join(dir, "link")
	if testutil.UnderWine() {
		t.Skip("Wine makes symbolic links its Windows programs cannot open or tell apart")
	}
	if err := os.Symlink(file, link); err != nil {
		t.Skipf("cannot make a symbolic link here: %v", err)
	}
	if f, err := OpenNoFollow(link, os.O_RDONLY, 0); !errors.Is(err, ErrSymlink) {
		if f != nil {
			f.Close()
		}
		t.Errorf("symbolic link: %v, want ErrSymlink", err)
	}
	created := filepath.Join(dir, "new")
	f, err = OpenNoFollow(created, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("creating: %v", err)
	}
	f.Close()
}

// FileOwner names this user as the owner of a file it made, where files
// have unix owners (os.Geteuid is -1 on Windows, which has none).
func TestFileOwner(t *testing.T) {
	fi, err := os.Stat(testutil.TempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	uid, ok := FileOwner(fi)
	if want := os.Geteuid(); ok != (want >= 0) || ok && uid != want {
		t.Errorf("FileOwner of a new directory: %d, %v; want uid %d", uid, ok, want)
	}
}
