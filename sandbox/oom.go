package sandbox

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/plugkit/plugkit/host"
)

// maxOOMLine is how much of each stderr line oomWatch keeps: enough for
// the messages it looks for.
const maxOOMLine = 256

// oomWatch reads a plugin's standard error, as the host copies it, for the
// messages runtimes print when an allocation fails (MemoryLimitError).
type oomWatch struct {
	mu   sync.Mutex
	line []byte // the start of the line being read
	full bool   // the line passed maxOOMLine: its rest is skipped
	seen string // the first message recognised
}

// Write takes the next bytes of stderr, in whatever pieces they come.
func (w *oomWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		piece := p
		if i >= 0 {
			piece = p[:i]
		}
		if room := maxOOMLine - len(w.line); !w.full {
			if len(piece) > room {
				piece, w.full = piece[:room], true
			}
			w.line = append(w.line, piece...)
		}
		if i < 0 {
			break
		}
		if w.seen == "" && outOfMemory(string(w.line)) {
			w.seen = strings.TrimSpace(string(w.line))
		}
		w.line, w.full, p = w.line[:0], false, p[i+1:]
	}
	return n, nil
}

// message returns the message recognised, if any, the last line too
// (one without its newline).
func (w *oomWatch) message() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == "" && outOfMemory(string(w.line)) {
		return strings.TrimSpace(string(w.line))
	}
	return w.seen
}

// outOfMemory reports whether a line of stderr is a runtime's report of
// a failed allocation: Go's (and its race detector's), Rust's, C++'s,
// Python's.
func outOfMemory(line string) bool {
	line = strings.TrimSpace(line)
	for _, prefix := range []string{
		"fatal error: out of memory",
		"fatal error: runtime: out of memory",
		"fatal error: runtime: cannot allocate memory",
		"runtime: out of memory:",
		"MemoryError:",
	} {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	switch {
	case line == "MemoryError":
		return true
	case strings.HasPrefix(line, "memory allocation of ") && strings.HasSuffix(line, " bytes failed"):
		return true // Rust's std
	case strings.Contains(line, "ThreadSanitizer failed to allocate") && strings.Contains(line, "(errno: 12)"):
		return true // ENOMEM
	case strings.Contains(line, "std::bad_alloc"):
		return true
	}
	return false
}

// watchOOM makes the launch report a plugin that dies after a failed
// allocation, under its memory rlimit of limit bytes, as a
// *MemoryLimitError: its stderr is read for a runtime's out-of-memory
// message, and its exit, when a failure, judged by it.
func watchOOM(l *host.Launch, limit int64) {
	w := &oomWatch{}
	if l.Stderr == nil {
		l.Stderr = w
	} else {
		l.Stderr = io.MultiWriter(l.Stderr, w)
	}
	prev := l.Exited
	l.Exited = func(st *os.ProcessState) error {
		var cause error
		if prev != nil {
			cause = prev(st)
		}
		if msg := w.message(); cause == nil && st != nil && !st.Success() && msg != "" {
			cause = &MemoryLimitError{Limit: limit, Enforcer: ByRlimit, Message: msg}
		}
		return cause
	}
}
