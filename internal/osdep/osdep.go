package osdep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrLocked reports a lock another open file holds.
var ErrLocked = errors.New("the file is locked by another process")

// Lock takes TryLock's lock on f, waiting while another open file holds
// it, until ctx ends. It tries again after 10 ms, then at growing
// intervals of at most 100 ms. When ctx ends first, the error wraps both
// ErrLocked and ctx's cause; any other error is TryLock's.
func Lock(ctx context.Context, f *os.File) error {
	wait := 10 * time.Millisecond
	for {
		err := TryLock(f)
		if !errors.Is(err, ErrLocked) {
			return err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w, still when the wait ended: %w", err, context.Cause(ctx))
		case <-timer.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// ErrSymlink reports a symbolic link that OpenNoFollow refused to follow.
var ErrSymlink = errors.New("it is a symbolic link, which is not followed")

// Executable reports whether a regular file of this mode may be run as a
// program on this system. On unix that takes an execute permission bit;
// Windows has none in file modes (it runs what CreateProcess accepts).
func Executable(mode fs.FileMode) bool { return executable(mode, ExecBits) }

// executable is Executable's decision with the system's fact as an
// argument, so that tests cover both systems everywhere.
func executable(mode fs.FileMode, execBits bool) bool {
	return !execBits || mode.Perm()&0o111 != 0
}

// HasDir reports whether path names a directory part, as opposed to a bare
// command name to look up in PATH. On Windows a backslash or a drive
// letter counts too.
func HasDir(path string) bool { return hasDir(path, PathSeparators) }

func hasDir(path, separators string) bool { return strings.ContainsAny(path, separators) }

// StatExited reports whether a Linux /proc/PID/stat line shows a process
// that has exited and waits to be reaped: its state, the field after the
// command name, is Z (zombie) or X (dead). A line it cannot read shows
// no exit.
func StatExited(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// ParsePPID reads the parent pid from a Linux /proc/PID/stat line: the
// fourth field, counted after the command name, which is in parentheses
// and may itself hold spaces and parentheses.
func ParsePPID(stat string) (int, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat line %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("malformed /proc stat line %q", stat)
	}
	return strconv.Atoi(f[1])
}
