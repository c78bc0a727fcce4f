package host

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/plugkit/plugkit/internal/filehash"
)

// ChecksumError reports a binary whose SHA-256 is not the pinned one
// (Command.SHA256). It was not run.
type ChecksumError struct {
	Path, Want, Got string
}

// Error names both checksums and what to do.
func (e *ChecksumError) Error() string {
	return fmt.Sprintf("SHA-256 of %s is %s, but it is pinned to %s: refused to run it; if the new binary is trusted, update the pin", e.Path, e.Got, e.Want)
}

// openPinned opens path, hashes what it reads from the open file and
// compares it with want (a file hashed before and unchanged since, by its
// identity, size and times, change time included, is not read again:
// filehash.SHA256File). On success the caller executes the returned open
// file (osdep.ExecFile), never path again.
func openPinned(ctx context.Context, path, want string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	got, err := filehash.SHA256File(ctx, f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("hashing %s: %w", path, err)
	}
	if !strings.EqualFold(got, want) {
		f.Close()
		return nil, &ChecksumError{Path: path, Want: strings.ToLower(want), Got: got}
	}
	return f, nil
}
