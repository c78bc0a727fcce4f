package manager

import (
	"context"
	"fmt"
	"io/fs"
	"sync"

	"github.com/plugkit/plugkit/internal/filehash"
	"github.com/plugkit/plugkit/internal/osdep"
)

// fileID names a file's contents within one Discover: the same device
// and inode with the same size and modification time. Two paths with the
// same fileID (symbolic links, hard links, a path listed twice) are one
// file, hashed once.
type fileID struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

// idOf returns the fileID of the file fi describes; ok is false where
// the system does not say (Windows), and the file is then hashed alone.
func idOf(fi fs.FileInfo) (id fileID, ok bool) {
	dev, ino, ok := osdep.FileID(fi)
	return fileID{dev, ino, fi.Size(), fi.ModTime().UnixNano()}, ok
}

// hashes hashes the binaries of one Discover: each file once, however
// many paths reach it, at most cap(slots) at a time. It lives no longer
// than one Finder.Describe: a file changed in place with its
// mtime restored is hashed afresh by the next one, and every launch is
// checked again by host.Start on the file it executes (against its pin,
// or else the sum found here).
type hashes struct {
	hook  func(path string) // nil but in tests: told of each file hashed
	slots chan struct{}
	mu    sync.Mutex
	sums  map[fileID]*hashResult
}

// hashResult is the checksum of one file, once done is closed.
type hashResult struct {
	done chan struct{}
	sum  string
	err  error
}

// newHashes hashes width files at a time; hook, when a test sets it, is
// called with each path about to be read and hashed.
func newHashes(width int, hook func(path string)) *hashes {
	return &hashes{hook: hook, slots: make(chan struct{}, max(width, 1)), sums: map[fileID]*hashResult{}}
}

// sum returns the SHA-256 of the file at path, which fi (from os.Stat)
// describes: the sum already computed in this Discover for the same file
// when there is one, else the file's own, read from the opened file after
// checking that it is still the one fi describes.
func (h *hashes) sum(ctx context.Context, path string, fi fs.FileInfo) (string, error) {
	id, ok := idOf(fi)
	if !ok {
		return h.hash(ctx, path, id, false)
	}
	h.mu.Lock()
	r := h.sums[id]
	if r == nil {
		r = &hashResult{done: make(chan struct{})}
		h.sums[id] = r
		h.mu.Unlock()
		r.sum, r.err = h.hash(ctx, path, id, true)
		close(r.done)
		return r.sum, r.err
	}
	h.mu.Unlock()
	select {
	case <-r.done:
		return r.sum, r.err
	case <-ctx.Done():
		return "", fmt.Errorf("hashing %s: %w", path, ctx.Err())
	}
}

// hash hashes the file at path in one of h's slots; when check is set,
// the opened file must be id before and after hashing.
func (h *hashes) hash(ctx context.Context, path string, id fileID, check bool) (string, error) {
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	case <-ctx.Done():
		return "", fmt.Errorf("hashing %s: %w", path, ctx.Err())
	}
	if h.hook != nil {
		h.hook(path)
	}
	return fileSHA256(ctx, path, func(fi fs.FileInfo) bool {
		got, ok := idOf(fi)
		return !check || ok && got == id
	})
}

// fileSHA256 hashes the file at path, giving up when ctx ends (a huge or
// endless file must not outlast Discover's deadline). same says whether
// the opened file, looked at before and after hashing, is still the one
// the caller looked at: if not, it was replaced or written meanwhile.
func fileSHA256(ctx context.Context, path string, same func(fs.FileInfo) bool) (string, error) {
	// Not blocking in open: a FIFO put in the binary's place after the
	// Stat must not hang Discover.
	f, err := osdep.OpenNoBlock(path)
	if err != nil {
		return "", statError(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("hashing %s: not a regular file any more: it was replaced while Discover looked at it; run Discover again", path)
	}
	if !same(fi) {
		return "", changedError(path)
	}
	sum, err := filehash.SHA256File(ctx, f)
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || !same(fi) {
		return "", changedError(path)
	}
	return sum, nil
}

// changedError says that the file at path changed while it was hashed.
func changedError(path string) error {
	return fmt.Errorf("hashing %s: the file changed while Discover looked at it (replaced or written): run Discover again once it is in place", path)
}
