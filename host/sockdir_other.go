//go:build !linux

package host

import (
	"errors"
	"os"
)

// ownerFIFO is Linux's: elsewhere the lock of a socket directory is a
// plain file.
func ownerFIFO(string) (r, w *os.File, err error) { return nil, nil, errors.ErrUnsupported }
