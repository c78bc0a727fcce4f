package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
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
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("install: lock %s: %w", dir, err)
	}
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("install: lock %s: %w", path, err)
		}
		if ok {
			return func() { f.Close() }, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("install: %s is locked by another install that did not finish in time (%w): wait for it, or remove a stale lock holder", path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
