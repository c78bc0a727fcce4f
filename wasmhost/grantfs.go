package wasmhost

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// grantFS is one of Config.Dirs as a guest's file system. Every path the
// guest names resolves beneath the directory, whatever symbolic links it
// holds or the guest makes: each operation goes through an os.Root
// opened on the directory, which walks the path one component at a time
// from the directory's descriptor, follows a symlink only to a place
// beneath it, and refuses ".." past it. A path that would leave the
// directory fails with EPERM (errEscape). wazero's own directory file
// system (sysfs.DirFS) joins the guest's path to the host's and lets the
// kernel follow symlinks wherever they point, out of the grant.
//
// A read-only grant refuses every change with EROFS.
type grantFS struct {
	experimentalsys.UnimplementedFS
	root     *os.Root
	readOnly bool
}

// errEscape is a guest's path that would resolve outside its grant.
const errEscape = experimentalsys.EPERM

// openGrant opens the grant d for one guest; close it when the guest
// ends.
func openGrant(d Dir) (*grantFS, error) {
	root, err := os.OpenRoot(d.HostPath)
	if err != nil {
		return nil, err
	}
	fi, err := root.Stat(".")
	if err != nil || !fi.IsDir() {
		root.Close()
		return nil, errors.New("not a directory")
	}
	return &grantFS{root: root, readOnly: !d.Writable}, nil
}

// String names the directory, as wazero's own file systems do.
func (g *grantFS) String() string { return g.root.Name() }

// close releases the directory's descriptor.
func (g *grantFS) close() { g.root.Close() }

// toErrno is err as the guest sees it: the errno it carries, or
// errEscape for a path that would leave the grant.
func toErrno(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	inner := err
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		inner = pe.Err
	case errors.As(err, &le):
		inner = le.Err
	}
	// os.Root's error for a path that leaves it is unexported and carries
	// no errno; its text is all there is to know it by.
	if _, isErrno := inner.(syscall.Errno); !isErrno && inner.Error() == "path escapes from parent" {
		return errEscape
	}
	return experimentalsys.UnwrapOSError(err)
}

// rel is the guest's path as os.Root takes it: wazero hands over a
// cleaned relative one ("." for the grant itself), perhaps with a
// trailing slash.
func rel(p string) string {
	if p == "" || p == "/" {
		return "."
	}
	return p
}

// writes is what in an open's flags changes the file.
const writes = experimentalsys.O_RDWR | experimentalsys.O_WRONLY | experimentalsys.O_CREAT | experimentalsys.O_TRUNC | experimentalsys.O_APPEND

// osFlag is flag for os.OpenFile. O_DIRECTORY and O_NOFOLLOW are checked
// by OpenFile, O_NONBLOCK does not apply to the files of a grant.
func osFlag(flag experimentalsys.Oflag) int {
	var f int
	switch flag & (experimentalsys.O_RDWR | experimentalsys.O_WRONLY) {
	case experimentalsys.O_RDWR:
		f = os.O_RDWR
	case experimentalsys.O_WRONLY:
		f = os.O_WRONLY
	default:
		f = os.O_RDONLY
	}
	for _, m := range []struct {
		sys experimentalsys.Oflag
		os  int
	}{
		{experimentalsys.O_APPEND, os.O_APPEND}, {experimentalsys.O_CREAT, os.O_CREATE}, {experimentalsys.O_EXCL, os.O_EXCL},
		{experimentalsys.O_SYNC | experimentalsys.O_DSYNC | experimentalsys.O_RSYNC, os.O_SYNC}, {experimentalsys.O_TRUNC, os.O_TRUNC},
	} {
		if flag&m.sys != 0 {
			f |= m.os
		}
	}
	return f
}

// OpenFile opens the file at p beneath the grant.
func (g *grantFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if g.readOnly && flag&writes != 0 {
		if flag&experimentalsys.O_DIRECTORY != 0 {
			return nil, experimentalsys.EISDIR
		}
		return nil, experimentalsys.EROFS
	}
	p = rel(p)
	if flag&experimentalsys.O_NOFOLLOW != 0 {
		// os.Root follows a last symlink (beneath the grant) whatever
		// the flags: refuse it first. Were it swapped for one after
		// this, the open would still stay beneath the grant.
		if fi, err := g.root.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, experimentalsys.ELOOP
		}
	}
	if flag&experimentalsys.O_DIRECTORY != 0 && flag&(experimentalsys.O_RDWR|experimentalsys.O_WRONLY) != 0 {
		return nil, experimentalsys.EISDIR
	}
	f, err := g.root.OpenFile(p, osFlag(flag), perm)
	if err != nil {
		return nil, toErrno(err)
	}
	file, errno := newGrantFile(g, p, flag, f)
	if errno != 0 {
		return nil, errno
	}
	if flag&experimentalsys.O_DIRECTORY != 0 {
		if isDir, errno := file.IsDir(); errno != 0 || !isDir {
			file.Close()
			return nil, experimentalsys.ENOTDIR
		}
	}
	return file, 0
}

// Lstat stats p beneath the grant, not following a last symlink.
func (g *grantFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := g.root.Lstat(rel(p))
	if err != nil {
		return sys.Stat_t{}, toErrno(err)
	}
	return sys.NewStat_t(fi), 0
}

// Stat stats p beneath the grant.
func (g *grantFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := g.root.Stat(rel(p))
	if err != nil {
		return sys.Stat_t{}, toErrno(err)
	}
	return sys.NewStat_t(fi), 0
}

// Mkdir makes the directory p beneath the grant.
func (g *grantFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	if g.readOnly {
		return experimentalsys.EROFS
	}
	errno := toErrno(g.root.Mkdir(rel(p), perm))
	if errno == experimentalsys.ENOTDIR {
		errno = experimentalsys.ENOENT // as wazero's own file system says
	}
	return errno
}

// Chmod changes p's mode beneath the grant.
func (g *grantFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	if g.readOnly {
		return experimentalsys.EROFS
	}
	return toErrno(g.root.Chmod(rel(p), perm))
}

// Rename renames from to to, both beneath the grant.
func (g *grantFS) Rename(from, to string) experimentalsys.Errno {
	if g.readOnly {
		return experimentalsys.EROFS
	}
	if from == to {
		return 0
	}
	return toErrno(g.root.Rename(rel(from), rel(to)))
}

// Rmdir removes the empty directory p beneath the grant.
func (g *grantFS) Rmdir(p string) experimentalsys.Errno {
	return g.remove(p, true)
}

// Unlink removes the file (or symlink) p beneath the grant.
func (g *grantFS) Unlink(p string) experimentalsys.Errno {
	return g.remove(p, false)
}

// remove removes p, a directory when dir, else anything else.
func (g *grantFS) remove(p string, dir bool) experimentalsys.Errno {
	if g.readOnly {
		return experimentalsys.EROFS
	}
	p = rel(p)
	fi, err := g.root.Lstat(p)
	switch {
	case err != nil:
		return toErrno(err)
	case dir && !fi.IsDir():
		return experimentalsys.ENOTDIR
	case !dir && fi.IsDir():
		return experimentalsys.EISDIR
	}
	return toErrno(g.root.Remove(p))
}

// Link makes newPath a hard link to oldPath, both beneath the grant.
func (g *grantFS) Link(oldPath, newPath string) experimentalsys.Errno {
	if g.readOnly {
		return experimentalsys.EROFS
	}
	return toErrno(g.root.Link(rel(oldPath), rel(newPath)))
}

// Symlink makes linkName, beneath the grant, a symlink to oldPath. The
// target is not resolved here: following it later stays beneath the
// grant. An absolute target is refused, as wazero's own file system
// does (a guest's absolute paths are not the host's).
func (g *grantFS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	if g.readOnly {
		return experimentalsys.EROFS
	}
	if path.IsAbs(oldPath) {
		return experimentalsys.EPERM
	}
	return toErrno(g.root.Symlink(filepath.FromSlash(oldPath), rel(linkName)))
}

// Readlink is the target of the symlink p beneath the grant.
func (g *grantFS) Readlink(p string) (string, experimentalsys.Errno) {
	target, err := g.root.Readlink(rel(p))
	if err != nil {
		return "", toErrno(err)
	}
	return filepath.ToSlash(target), 0
}

// Utimens sets p's times beneath the grant (UTIME_OMIT leaves one).
func (g *grantFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if g.readOnly {
		return experimentalsys.EROFS
	}
	return g.chtimes(p, atim, mtim)
}

func (g *grantFS) chtimes(p string, atim, mtim int64) experimentalsys.Errno {
	if atim == experimentalsys.UTIME_OMIT && mtim == experimentalsys.UTIME_OMIT {
		return 0
	}
	// The zero time leaves a time as it is.
	t := func(ns int64) time.Time {
		if ns == experimentalsys.UTIME_OMIT {
			return time.Time{}
		}
		return time.Unix(0, ns)
	}
	return toErrno(g.root.Chtimes(rel(p), t(atim), t(mtim)))
}

// grantFile is a file opened beneath a grant: wazero's file for an
// fs.File (sysfs.AdaptFS) over the *os.File the grant's os.Root opened,
// which reads, writes, seeks and lists it, and reopens a directory to
// list it afresh through reopener, beneath the grant too. grantFile adds
// what that file lacks (truncating, syncing, setting times, the append
// flag).
type grantFile struct {
	experimentalsys.File
	g      *grantFS
	rel    string
	flag   experimentalsys.Oflag
	file   *os.File // the descriptor opened, which a regular file keeps
	closed bool
}

// reopener is the fs.FS wazero's file reopens a directory through (to
// list it afresh after a rewind); its first Open is the file the grant
// opened.
type reopener struct {
	g     *grantFS
	first *os.File
}

func (o *reopener) Open(name string) (fs.File, error) {
	if f := o.first; f != nil {
		o.first = nil
		return f, nil
	}
	return o.g.root.Open(name)
}

// newGrantFile wraps f, opened at p with flag.
func newGrantFile(g *grantFS, p string, flag experimentalsys.Oflag, f *os.File) (*grantFile, experimentalsys.Errno) {
	file, errno := (&sysfs.AdaptFS{FS: &reopener{g: g, first: f}}).OpenFile(p, experimentalsys.O_RDONLY, 0)
	if errno != 0 {
		f.Close()
		return nil, errno
	}
	return &grantFile{File: file, g: g, rel: p, flag: flag, file: f}, 0
}

// IsAppend reports whether writes append.
func (f *grantFile) IsAppend() bool { return f.flag&experimentalsys.O_APPEND != 0 }

// writable is the errno of a change to the file's content: 0 for a
// regular file open for writing.
func (f *grantFile) writable() experimentalsys.Errno {
	if f.closed {
		return experimentalsys.EBADF
	}
	if isDir, errno := f.IsDir(); errno != 0 {
		return errno
	} else if isDir {
		return experimentalsys.EISDIR
	}
	if f.g.readOnly || f.flag&(experimentalsys.O_RDWR|experimentalsys.O_WRONLY) == 0 {
		return experimentalsys.EBADF
	}
	return 0
}

// Truncate sets the file's size.
func (f *grantFile) Truncate(size int64) experimentalsys.Errno {
	if size < 0 {
		return experimentalsys.EINVAL
	}
	if errno := f.writable(); errno != 0 {
		return errno
	}
	return toErrno(f.file.Truncate(size))
}

// Sync flushes the file to its device.
func (f *grantFile) Sync() experimentalsys.Errno {
	if errno := f.writable(); errno != 0 {
		return errno
	}
	return toErrno(f.file.Sync())
}

// Datasync is Sync.
func (f *grantFile) Datasync() experimentalsys.Errno { return f.Sync() }

// Utimens sets the file's times, by its path beneath the grant.
func (f *grantFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	if f.closed || f.g.readOnly {
		return experimentalsys.EBADF
	}
	return f.g.chtimes(f.rel, atim, mtim)
}

// Close closes the file.
func (f *grantFile) Close() experimentalsys.Errno {
	if f.closed {
		return 0
	}
	f.closed = true
	return f.File.Close()
}
