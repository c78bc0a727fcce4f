package host

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// One poller for the stdout of every plugin: after the handshake, a
// plugin's stdout is added to one epoll instance, read by one goroutine
// for all plugins (pollPipes) and logged, instead of a goroutine a plugin
// blocked in its read. epoll is level-triggered and each ready pipe gets
// one read (at most pipeRead bytes) a round, so a plugin that floods its
// stdout takes its turn with the others. Memory: one buffer of pipeRead
// for all plugins, and a plugin's unfinished line, at most maxLogLine
// (the goroutine a plugin had a buffer of maxLogLine each). stderr keeps
// a goroutine a plugin: its copy (Command.Output.Stderr, Launch.Stderr)
// is the caller's writer, which may block, and would block every
// plugin's output here.

// pipeRead is the most the poller reads from one pipe at a time, and the
// size of its one buffer.
const pipeRead = 64 << 10

var pipes struct {
	fd      int // the epoll instance; -1 where it failed (openPipePoller)
	wake    int // an eventfd in it, that wakes the poller to see it has nothing left
	mu      sync.Mutex
	watched map[int32]*pipeWatch // key (epoll data) -> watch
	lastKey int32
	polling bool // pollPipes runs
}

// pipeWatch is one pipe the poller reads into its sink.
type pipeWatch struct {
	key  int32
	f    *os.File
	sink *logSink
	done chan struct{}

	mu    sync.Mutex // held while the pipe is read and logged
	ended bool
	buf   lineBuf
}

// wakeKey is the wake eventfd's key in the epoll instance.
const wakeKey = 0

// openPipePoller makes the poller's epoll instance and wake eventfd
// (startSpawner does, once, so that whoever counts a host's descriptors
// after its first plugin counts these too). The poller's goroutine runs
// only while a pipe is watched: a host with no plugin has none.
func openPipePoller() {
	pipes.fd, pipes.wake = -1, -1
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeKey}
	if unix.EpollCtl(fd, unix.EPOLL_CTL_ADD, wake, &ev) != nil {
		unix.Close(fd)
		unix.Close(wake)
		return
	}
	pipes.fd, pipes.wake = fd, wake
	pipes.watched = map[int32]*pipeWatch{}
}

// watchPipe has f read to its end by the poller, its lines logged by
// sink after first (what was read of f already), and done closed at the
// end. It returns the function that ends the watch early (after which
// f can be closed), or false where there is no poller (then nothing was
// read or logged: the caller reads f itself).
func watchPipe(f *os.File, first []byte, sink *logSink, done chan struct{}) (stop func(), ok bool) {
	startSpawner()
	if pipes.fd < 0 {
		return nil, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	w := &pipeWatch{f: f, sink: sink, done: done}
	w.mu.Lock()
	defer w.mu.Unlock()
	pipes.mu.Lock()
	pipes.lastKey = max(pipes.lastKey+1, wakeKey+1) // wraps after 2^31 plugins, long after the first one is gone
	w.key = pipes.lastKey
	added := false
	rc.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: w.key}
		added = unix.EpollCtl(pipes.fd, unix.EPOLL_CTL_ADD, int(fd), &ev) == nil
	})
	if added {
		pipes.watched[w.key] = w
		if !pipes.polling {
			pipes.polling = true
			go pollPipes()
		}
	}
	pipes.mu.Unlock()
	if !added {
		return nil, false
	}
	sink.push(&w.buf, first)
	return w.stop, true
}

// pollPipes reads the pipes epoll reports ready, until none is watched.
func pollPipes() {
	var events [64]unix.EpollEvent
	buf := make([]byte, pipeRead)
	for {
		n, err := unix.EpollWait(pipes.fd, events[:], -1)
		if err != nil && err != unix.EINTR {
			n = 0 // only a bad epoll descriptor; the watches end below
		}
		for _, ev := range events[:max(n, 0)] {
			if ev.Fd == wakeKey {
				var b [8]byte
				unix.Read(pipes.wake, b[:])
				continue
			}
			pipes.mu.Lock()
			w := pipes.watched[ev.Fd]
			pipes.mu.Unlock()
			if w != nil {
				w.read(buf)
			}
		}
		pipes.mu.Lock()
		if len(pipes.watched) == 0 || (err != nil && err != unix.EINTR) {
			pipes.polling = false
			pipes.mu.Unlock()
			return
		}
		pipes.mu.Unlock()
	}
}

// read reads what the pipe has, once, and logs it; at the pipe's end (or
// on an error) it ends the watch.
func (w *pipeWatch) read(buf []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	rc, err := w.f.SyscallConn()
	if err != nil {
		w.end()
		return
	}
	n := 0
	if cerr := rc.Read(func(fd uintptr) bool {
		n, err = unix.Read(int(fd), buf)
		return true // never wait: epoll said it is ready, or it is not yet
	}); cerr != nil {
		err = cerr
	}
	switch {
	case n > 0:
		w.sink.push(&w.buf, buf[:n])
	case err == unix.EAGAIN || err == unix.EINTR:
	default: // 0 bytes, the end; or an error
		w.end()
	}
}

// stop ends the watch if it has not ended: what was read is logged, and
// the pipe is no longer read.
func (w *pipeWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.end()
	}
}

// end takes the pipe out of the poller, logs a last partial line and
// closes done. w.mu is held.
func (w *pipeWatch) end() {
	w.ended = true
	pipes.mu.Lock()
	delete(pipes.watched, w.key)
	if rc, err := w.f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.EpollCtl(pipes.fd, unix.EPOLL_CTL_DEL, int(fd), nil) })
	}
	if len(pipes.watched) == 0 {
		// The poller may be waiting: it sees there is nothing left.
		unix.Write(pipes.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	}
	pipes.mu.Unlock()
	w.sink.flush(&w.buf)
	close(w.done)
}
