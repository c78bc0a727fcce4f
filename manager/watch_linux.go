//go:build linux

package manager

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// The changes inotify reports to a watch: those that complete a file
// (closed after writing, renamed in or out, removed, its mode or owner
// changed), those that say a file is being written (created, modified),
// and those of the directory itself.
const inotifyMask = unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_ATTRIB |
	unix.IN_CREATE | unix.IN_MODIFY | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

const (
	// writingHold bounds how long a file being written (created or
	// modified, not yet closed) holds a change back: a writer that keeps
	// its file open longer does not stop the watch.
	writingHold = 30 * time.Second
	// maxWriting bounds the files being written a watch keeps track of;
	// past it, a change is reported without waiting for them.
	maxWriting = 1024
	// inotifyBuffer is the size of one read of events: at least one
	// event with the longest name (16 + 256 bytes).
	inotifyBuffer = 64 << 10
)

// watch watches the set through inotify: a change is reported once every
// file being written in it is closed (a half-written binary is never
// reported), or writingHold after. Where inotify cannot be used (its
// limits reached), or when a watched directory is removed or renamed, it
// polls every PollInterval instead, saying so in the log.
func (f *Finder) watch(ctx context.Context, w watchSet) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		f.logger().Warn("plugkit: inotify is not available; polling the plugin directories instead", "error", err, "every", f.pollInterval(),
			"fix", "raise fs.inotify.max_user_instances (sysctl) for changes to be seen at once")
		startPoll(ctx, w, f.pollInterval(), out)
		return out, nil
	}
	dirs := map[int32]string{}
	for _, d := range w.parents() {
		wd, err := unix.InotifyAddWatch(fd, d, inotifyMask)
		if err != nil {
			unix.Close(fd)
			f.logger().Warn("plugkit: cannot watch a plugin directory through inotify; polling instead", "dir", d, "error", err, "every", f.pollInterval(),
				"fix", "raise fs.inotify.max_user_watches (sysctl) for changes to be seen at once")
			startPoll(ctx, w, f.pollInterval(), out)
			return out, nil
		}
		dirs[int32(wd)] = d
	}
	in := &inotifyWatch{f: f, w: w, dirs: dirs, file: os.NewFile(uintptr(fd), "inotify"), out: out, writing: map[string]time.Time{}}
	go in.run(ctx)
	return out, nil
}

// inotifyWatch is one watch through inotify.
type inotifyWatch struct {
	f    *Finder
	w    watchSet
	dirs map[int32]string // by watch descriptor
	file *os.File         // the inotify instance, non-blocking: Close ends a Read
	out  chan struct{}

	pending bool                 // a change is to be reported
	lost    bool                 // a watched directory is gone: poll
	writing map[string]time.Time // files being written, since when
}

// inotifyEvent is one event read.
type inotifyEvent struct {
	wd   int32
	mask uint32
	name string
}

func (in *inotifyWatch) run(ctx context.Context) {
	events := make(chan []inotifyEvent)
	go in.read(events)
	hold := time.NewTimer(writingHold)
	hold.Stop()
	defer hold.Stop()
	for {
		select {
		case <-ctx.Done():
			in.file.Close()
			for range events {
			}
			close(in.out)
			return
		case batch, ok := <-events:
			if !ok {
				// The instance failed: poll.
				in.lost = true
			}
			for _, e := range batch {
				in.handle(e)
			}
		case now := <-hold.C:
			for p, since := range in.writing {
				if now.Sub(since) >= writingHold {
					delete(in.writing, p)
				}
			}
		}
		if in.pending && len(in.writing) == 0 {
			in.pending = false
			notify(in.out)
		}
		if in.lost {
			in.file.Close()
			for range events {
			}
			in.f.logger().Warn("plugkit: a watched plugin directory was removed or renamed; polling instead", "dirs", in.w.parents(), "every", in.f.pollInterval())
			// What changed since the loss is unknown: the first look is
			// reported.
			poll(ctx, in.w, in.f.pollInterval(), in.out, nil)
			return
		}
		if in.pending {
			hold.Reset(time.Until(in.oldestWriting().Add(writingHold)))
		}
	}
}

// oldestWriting is when the oldest file being written began.
func (in *inotifyWatch) oldestWriting() time.Time {
	oldest := time.Now()
	for _, since := range in.writing {
		if since.Before(oldest) {
			oldest = since
		}
	}
	return oldest
}

// read reads events until the instance is closed, then closes events.
func (in *inotifyWatch) read(events chan<- []inotifyEvent) {
	defer close(events)
	buf := make([]byte, inotifyBuffer)
	for {
		n, err := in.file.Read(buf)
		if err != nil {
			return
		}
		events <- parseInotify(buf[:n])
	}
}

// parseInotify splits what one read returned into events.
func parseInotify(buf []byte) []inotifyEvent {
	var out []inotifyEvent
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		e := inotifyEvent{
			wd:   int32(binary.NativeEndian.Uint32(buf[off:])),
			mask: binary.NativeEndian.Uint32(buf[off+4:]),
		}
		n := int(binary.NativeEndian.Uint32(buf[off+12:]))
		off += unix.SizeofInotifyEvent
		if n > len(buf)-off {
			break
		}
		e.name = string(bytes.TrimRight(buf[off:off+n], "\x00"))
		off += n
		out = append(out, e)
	}
	return out
}

// handle takes one event into account.
func (in *inotifyWatch) handle(e inotifyEvent) {
	if e.mask&unix.IN_Q_OVERFLOW != 0 {
		// Events were lost: whatever was being written is reported.
		clear(in.writing)
		in.pending = true
		return
	}
	dir, ok := in.dirs[e.wd]
	if !ok {
		return
	}
	if e.mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 {
		in.pending, in.lost = true, true
		return
	}
	if e.name == "" || !in.w.matters(dir, e.name) {
		return
	}
	p := filepath.Join(dir, e.name)
	switch {
	case e.mask&(unix.IN_CREATE|unix.IN_MODIFY) != 0:
		if _, ok := in.writing[p]; ok {
			return
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && (e.mask&unix.IN_MODIFY != 0 || st.Nlink == 1) && len(in.writing) < maxWriting {
			// A file opened for writing: its close (IN_CLOSE_WRITE) ends it.
			in.writing[p] = time.Now()
			return
		}
		// A link, a directory, a hard link to a file written elsewhere:
		// complete as it appears.
		in.pending = true
	default:
		// Closed after writing, renamed in or out, removed, its mode or
		// owner changed.
		delete(in.writing, p)
		in.pending = true
	}
}
