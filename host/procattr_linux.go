package host

import (
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setProcAttr asks the kernel to kill the plugin if the host dies, even
// for plugins that do not watch their parent themselves (plugkit plugins
// do), and puts the plugin in a process group of its own, so that what it
// starts is stopped with it. Other attributes a Runner set (namespaces)
// are kept; a Runner that asked for a session of the plugin's own
// (Setsid, which also makes its process group) keeps it.
func setProcAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = !cmd.SysProcAttr.Setsid
}

// Pdeathsig fires when the thread that forked the child exits, not when
// the process does. Go runs a goroutine on whatever thread, and ends a
// thread whose goroutine exits while locked to it (runtime.LockOSThread):
// a plugin started from such a goroutine would be killed while its host
// lives. So every plugin is forked from one spawner thread that lives as
// long as the host.

// sysProc is what a system adds to a plugin process; nothing on unix,
// where the process group is the plugin's pid.
type sysProc struct{}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce  sync.Once
	spawns     chan spawnRequest
	childExits chan os.Signal // SIGCHLD
)

// reapCheck is how often the spawner looks for exits without a SIGCHLD:
// a safety net for a program that stops the notification of signals it
// did not ask for (signal.Reset with no arguments), whose plugins' exits
// would otherwise go unseen.
const reapCheck = time.Second

// spawner starts the commands it is sent, from its own locked thread, and
// reaps the processes that exited (reapExited) whenever a child exits.
func spawner() {
	runtime.LockOSThread() // never unlocked: this thread lives as long as the process
	check := time.NewTicker(reapCheck)
	for {
		select {
		case r := <-spawns:
			r.done <- r.cmd.Start()
		case <-childExits:
			reapExited()
		case <-check.C:
			reapExited()
		}
	}
}

// startSpawner starts the spawner, once.
func startSpawner() {
	spawnOnce.Do(func() {
		spawns = make(chan spawnRequest)
		childExits = make(chan os.Signal, 1)
		signal.Notify(childExits, syscall.SIGCHLD)
		// With the spawner, so that whoever counts a host's descriptors
		// after its first plugin counts this one too.
		exitsFD, _ = unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		openPipePoller()
		go spawner()
	})
}

// startCmd starts cmd from the spawner thread.
func startCmd(cmd *exec.Cmd) (sysProc, error) {
	startSpawner()
	r := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	spawns <- r
	return sysProc{}, <-r.done
}

// One reaper for all plugins: instead of a goroutine (and a thread, in
// waitid) a plugin waiting for its exit, the pidfd of each plugin process
// is added to one epoll instance, and the spawner asks it which have
// exited whenever a child exits (SIGCHLD, which the kernel sends after
// the exit is visible on the pidfd; signals that arrive together are one
// wake-up, and each wake-up takes every exit epoll reports). The reap of
// each exited process runs in a goroutine of its own, which calls Wait (at
// once: the process has exited). epoll answers with the exited ones
// alone, so 300 exits at once cost 300 answers, not 300 scans of 300.

var (
	exitMu  sync.Mutex
	exitsFD = -1                 // the epoll instance (startSpawner); -1 where it failed
	watched = map[int32]func(){} // a watched process's key (its epoll data) -> its reap
	lastKey int32
)

// reapWhenExited runs reap in a goroutine of its own once process p has
// exited; reap must Wait for p, and is the only one to. Where p has no
// pidfd (a kernel before 5.4) or epoll fails, a goroutine waits for it at
// once.
//
// The pidfd is os.Process's own, added to epoll inside WithHandle: it
// stays open until Wait, which only reap calls, and closing it (Wait)
// takes it out of epoll.
func reapWhenExited(p *os.Process, reap func()) {
	startSpawner()
	exitMu.Lock()
	lastKey++ // wraps after 2^31 plugins, long after the first one is gone
	key := lastKey
	added := false
	if exitsFD >= 0 {
		p.WithHandle(func(pidfd uintptr) {
			ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: key}
			added = unix.EpollCtl(exitsFD, unix.EPOLL_CTL_ADD, int(pidfd), &ev) == nil
		})
	}
	if added {
		watched[key] = reap
	}
	exitMu.Unlock()
	if !added {
		go reap()
		return
	}
	reapExited() // it may have exited before it was watched
}

// reapExited starts the reap of every watched process that has exited.
func reapExited() {
	var events [64]unix.EpollEvent
	for {
		exitMu.Lock()
		if exitsFD < 0 {
			exitMu.Unlock()
			return
		}
		n, err := unix.EpollWait(exitsFD, events[:], 0)
		var exited []func()
		for _, ev := range events[:max(n, 0)] {
			if reap, ok := watched[ev.Fd]; ok {
				exited = append(exited, reap)
				delete(watched, ev.Fd)
			}
		}
		exitMu.Unlock()
		for _, reap := range exited {
			go reap()
		}
		if err != unix.EINTR && n < len(events) {
			return
		}
	}
}
