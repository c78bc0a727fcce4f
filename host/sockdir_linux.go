package host

import (
	"os"

	"golang.org/x/sys/unix"
)

// ownerFIFO makes path a named pipe, opens its read end (non-blocking,
// for the host's poller) and flock()s it, then opens its write end: the
// lock of a socket directory that is also the pipe of the plugin's
// standard output, so that the lock costs the host no descriptor of its
// own. Linux locks a FIFO like a file (by its inode, across users and
// PID namespaces); a file system without FIFOs, or without locks on them,
// fails here and the caller locks a plain file instead.
func ownerFIFO(path string) (r, w *os.File, err error) {
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return nil, nil, err
	}
	fail := func(fds ...int) (*os.File, *os.File, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		os.Remove(path)
		return nil, nil, err
	}
	rfd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail()
	}
	if err = unix.Flock(rfd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail(rfd)
	}
	// Blocking, as a pipe's write end is: with the read end open, the
	// open returns at once.
	wfd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(rfd)
	}
	return os.NewFile(uintptr(rfd), path), os.NewFile(uintptr(wfd), path), nil
}
