package plugin

import (
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/plugkit/plugkit/internal/osdep"
)

// deathSignalNumber is the signal the kernel sends this process when its
// parent goes (PR_SET_PDEATHSIG): a real-time signal nothing else uses,
// caught, never fatal. The kernel sends it when the parent *thread* that
// forked this process exits, which a host's thread may well do while the
// host lives on (a Go host's goroutine locked to its thread, a thread
// pool of another language's host): so the signal only wakes the watch,
// which then checks that this process was re-parented. SIGKILL, as
// runc and bubblewrap use for children they fork themselves, would kill
// a plugin whose host merely ended a thread.
const deathSignalNumber = syscall.Signal(40)

// deathSignal asks the kernel to signal this process as soon as its
// parent dies, and returns the channel that receives it; disarm undoes
// both. A failure leaves the poll alone to watch. kernelWatches reports
// that the kernel tells of the parent's death at once: by that signal, or
// by the SIGKILL the host set.
//
// A parent death signal the host set already (plugkit's host sets
// SIGKILL) is the host's choice and is kept: the poll alone watches
// then, and disarm leaves it in place, so that a plugin serving without
// the watch (debug harnesses) still dies with its host.
func deathSignal() (wake <-chan os.Signal, disarm func(), kernelWatches bool) {
	var prev int32
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, syscall.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&prev)), 0, 0, 0, 0); errno != 0 || prev != 0 {
		return nil, func() {}, errno == 0 && syscall.Signal(prev) == syscall.SIGKILL
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, deathSignalNumber)
	if err := prctl(syscall.PR_SET_PDEATHSIG, uintptr(deathSignalNumber)); err != nil {
		signal.Stop(ch)
		return nil, func() {}, false
	}
	return ch, func() {
		prctl(syscall.PR_SET_PDEATHSIG, 0)
		signal.Stop(ch)
	}, true
}

func prctl(option int, arg uintptr) error {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, uintptr(option), arg, 0, 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// hostExists reports whether process pid exists and has not exited: a
// host killed but not yet reaped by its own parent is a zombie, and gone.
func hostExists(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	return !osdep.StatExited(stat)
}
