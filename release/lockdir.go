package release

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/plugkit/plugkit/internal/osdep"
)

// lockFileName is the file in a plugin directory that installs lock.
const lockFileName = ".plugkit-install.lock"

// maxLockWait bounds the wait for another install's directory lock when
// ctx allows longer.
const maxLockWait = 10 * time.Minute

// lockDir waits, until ctx is done or for maxLockWait, for the exclusive
// lock on dir's lock file, so that two installs into one directory take
// turns.
func lockDir(ctx context.Context, dir string) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, maxLockWait)
	defer cancel()
	path := filepath.Join(dir, lockFileName)
	// Not through a symbolic link: one planted there would make install
	// create or lock a file elsewhere, as root when it runs as root.
	f, err := osdep.OpenNoFollow(path, os.O_CREATE|os.O_RDWR, 0o644)
	if errors.Is(err, osdep.ErrSymlink) {
		return nil, fmt.Errorf("install: lock %s: it is a symbolic link, which install does not follow: remove it (install creates the file)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("install: lock %s: %w", dir, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("install: lock %s: it is not a regular file: remove it (install creates the file)", path)
	}
	err = osdep.Lock(ctx, f)
	if errors.Is(err, osdep.ErrLocked) {
		f.Close()
		return nil, fmt.Errorf("install: %s is locked by another install that did not finish in time (%w): wait for it, or remove a stale lock holder", path, ctx.Err())
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("install: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
