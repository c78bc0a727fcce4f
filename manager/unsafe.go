package manager

import (
	"debug/buildinfo"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/plugkit/plugkit/internal/osdep"
)

// unsafeFile says why the plugin binary at path (fi: its Stat, through
// any symbolic link) must not run, as ssh and sudo refuse such files: it
// is set-user-ID or set-group-ID, group- or world-writable, or owned by
// another user than the host's or root; or its directory (the link's and
// the file's own) is group- or world-writable without the sticky bit, or
// owned by another user. Anyone who may write the file or replace it
// could run code as the host. It returns nil where files have no unix
// owner (Windows), whose permission bits say nothing of this.
func unsafeFile(path string, fi fs.FileInfo) error {
	if _, ok := osdep.FileOwner(fi); !ok {
		return nil
	}
	if err := unsafeOwnerOrMode(fi, "it is"); err != nil {
		return err
	}
	dirs := []string{filepath.Dir(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil && filepath.Dir(real) != dirs[0] {
		dirs = append(dirs, filepath.Dir(real))
	}
	for _, dir := range dirs {
		di, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("its directory %s cannot be checked: %w", dir, err)
		}
		if err := unsafeOwnerOrMode(di, "its directory "+dir+" is"); err != nil {
			return err
		}
	}
	return nil
}

// unsafeOwnerOrMode checks one file or directory's owner and mode; what
// names it in the error ("it is", "its directory D is").
func unsafeOwnerOrMode(fi fs.FileInfo, what string) error {
	mode := fi.Mode()
	uid, _ := osdep.FileOwner(fi)
	switch me := os.Geteuid(); {
	case !mode.IsDir() && mode&(fs.ModeSetuid|fs.ModeSetgid) != 0:
		return fmt.Errorf("refused: %s set-user-ID or set-group-ID (mode %v): a plugin never needs it; chmod u-s,g-s it, or move it out of the plugin directory", what, mode)
	case uid != me && uid != 0:
		return fmt.Errorf("refused: %s owned by uid %d, not by this user (uid %d) or root: that user could change what runs as this one; chown it, or move it out of the plugin directory", what, uid, me)
	case mode.IsDir() && mode&0o022 != 0 && mode&fs.ModeSticky == 0:
		return fmt.Errorf("refused: %s group- or world-writable without the sticky bit (mode %v): others could replace the plugin; chmod go-w it", what, mode)
	case !mode.IsDir() && mode&0o022 != 0:
		return fmt.Errorf("refused: %s group- or world-writable (mode %v): others could change what runs; chmod go-w it", what, mode)
	}
	return nil
}

// plugkitModule is the module a Go plugin of plugkit links.
const plugkitModule = "github.com/plugkit/plugkit"

// isPlugin says whether the file at path identifies as a plugin without
// running: its base name matches Names (every name when Names is
// empty), or it is a Go program that links plugkit's module, by its
// build info (debug/buildinfo reads it from the file; a non-Go file,
// a script, is not one).
func (f *Finder) isPlugin(path string) bool {
	if f.Names == "" {
		return true
	}
	if ok, _ := filepath.Match(f.Names, filepath.Base(path)); ok {
		return true
	}
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return false // never open a FIFO or a device to read it
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return false
	}
	if info.Main.Path == plugkitModule {
		return true
	}
	for _, d := range info.Deps {
		if d.Path == plugkitModule {
			return true
		}
	}
	return false
}
