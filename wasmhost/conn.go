package wasmhost

import (
	"errors"
	"io"
	"io/fs"
	"sync/atomic"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	wazerosys "github.com/tetratelabs/wazero/sys"

	"github.com/plugkit/plugkit/internal/guestconn"
)

// connFS is what a guest finds at guestconn.Dir: a directory holding one
// file, guestconn.Name, its end of the connection to the host, which it
// may open once.
type connFS struct {
	experimentalsys.UnimplementedFS
	file   *connFile
	opened atomic.Bool
}

func newConnFS(p *guestconn.Pipe, polls *atomic.Int64) *connFS {
	return &connFS{file: &connFile{p: p, polls: polls}}
}

func (c *connFS) OpenFile(path string, _ experimentalsys.Oflag, _ fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	switch path {
	case ".", "":
		return connDir{}, 0
	case guestconn.Name:
		if !c.opened.CompareAndSwap(false, true) {
			return nil, experimentalsys.EACCES
		}
		return c.file, 0
	}
	return nil, experimentalsys.ENOENT
}

func (c *connFS) Stat(path string) (wazerosys.Stat_t, experimentalsys.Errno) {
	switch path {
	case ".", "":
		return connDir{}.Stat()
	case guestconn.Name:
		return c.file.Stat()
	}
	return wazerosys.Stat_t{}, experimentalsys.ENOENT
}

func (c *connFS) Lstat(path string) (wazerosys.Stat_t, experimentalsys.Errno) { return c.Stat(path) }

// connDir is connFS's directory.
type connDir struct {
	experimentalsys.UnimplementedFile
}

func (connDir) IsDir() (bool, experimentalsys.Errno) { return true, 0 }

func (connDir) Stat() (wazerosys.Stat_t, experimentalsys.Errno) {
	return wazerosys.Stat_t{Mode: fs.ModeDir | 0o500, Nlink: 1}, 0
}

func (connDir) Readdir(int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	return []experimentalsys.Dirent{{Name: guestconn.Name, Type: fs.ModeNamedPipe}}, 0
}

// connFile is the guest's end of its connection, a pollable file: read
// without waiting when the guest made it non-blocking (Go's runtime
// does), its poll_oneoff then waits in Poll.
type connFile struct {
	experimentalsys.UnimplementedFile
	p        *guestconn.Pipe
	nonblock atomic.Bool
	polls    *atomic.Int64 // Poll's calls (a test hook)
}

// connFile is a PollableFile: poll_oneoff waits on it when it is the
// guest's descriptor 0.
var _ experimentalsys.PollableFile = (*connFile)(nil)

func (f *connFile) IsDir() (bool, experimentalsys.Errno) { return false, 0 }

func (f *connFile) Stat() (wazerosys.Stat_t, experimentalsys.Errno) {
	return wazerosys.Stat_t{Mode: fs.ModeNamedPipe | 0o600, Nlink: 1}, 0
}

func (f *connFile) IsNonblock() bool { return f.nonblock.Load() }

func (f *connFile) SetNonblock(enable bool) experimentalsys.Errno {
	f.nonblock.Store(enable)
	return 0
}

func (f *connFile) Read(b []byte) (int, experimentalsys.Errno) {
	for {
		n, err := f.p.TryRead(b)
		switch {
		case err == nil:
			return n, 0
		case errors.Is(err, io.EOF):
			return 0, 0
		case f.nonblock.Load():
			return 0, experimentalsys.EAGAIN
		}
		f.p.WaitReadable(-1)
	}
}

func (f *connFile) Write(b []byte) (int, experimentalsys.Errno) {
	n, err := f.p.Write(b)
	if err != nil {
		return n, experimentalsys.EIO
	}
	return n, 0
}

// Poll waits, within timeoutMillis (negative: for ever), until the guest
// has something to read or the connection is closed.
func (f *connFile) Poll(flag experimentalsys.Pflag, timeoutMillis int32) (bool, experimentalsys.Errno) {
	if flag != experimentalsys.POLLIN {
		return false, experimentalsys.ENOTSUP
	}
	f.polls.Add(1)
	timeout := time.Duration(timeoutMillis) * time.Millisecond
	if timeoutMillis < 0 {
		timeout = -1
	}
	return f.p.WaitReadable(timeout), 0
}

// Close closes the connection: the host reads its end.
func (f *connFile) Close() experimentalsys.Errno {
	f.p.Close()
	return 0
}
