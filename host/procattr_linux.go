package host

import (
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"

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

// spawner starts the commands it is sent, from its own locked thread, and
// reaps the processes that exited (reapExited) whenever a child exits.
func spawner() {
	runtime.LockOSThread() // never unlocked: this thread lives as long as the process
	for {
		select {
		case r := <-spawns:
			r.done <- r.cmd.Start()
		case <-childExits:
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
// waitid) a plugin waiting for its exit, the spawner polls the pidfds of
// the processes it watches whenever a child exits (SIGCHLD, which the
// kernel sends after the exit is visible on the pidfd; signals that
// arrive together are one wake-up, and every wake-up checks them all),
// and runs the reap of each exited one in a goroutine of its own, which
// calls Wait (at once: the process has exited).

var (
	exitMu  sync.Mutex
	watched = map[uintptr]func(){} // a watched process's pidfd -> its reap
)

// reapWhenExited runs reap in a goroutine of its own once process p has
// exited; reap must Wait for p, and is the only one to. Where p has no
// pidfd (a kernel before 5.4), a goroutine waits for it at once.
//
// The pidfd is os.Process's own: it stays open until Wait, which only
// reap calls, after p left watched.
func reapWhenExited(p *os.Process, reap func()) {
	var pidfd uintptr
	if p.WithHandle(func(h uintptr) { pidfd = h }) != nil {
		go reap()
		return
	}
	startSpawner()
	exitMu.Lock()
	watched[pidfd] = reap
	exitMu.Unlock()
	reapExited() // it may have exited before it was watched
}

// reapExited starts the reap of every watched process that has exited.
func reapExited() {
	exitMu.Lock()
	fds := make([]unix.PollFd, 0, len(watched))
	for fd := range watched {
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	var exited []func()
	if _, err := unix.Poll(fds, 0); err == nil {
		for _, f := range fds {
			if f.Revents != 0 { // POLLIN: exited; POLLERR, POLLNVAL: no use waiting
				exited = append(exited, watched[uintptr(f.Fd)])
				delete(watched, uintptr(f.Fd))
			}
		}
	}
	exitMu.Unlock()
	for _, reap := range exited {
		go reap()
	}
}
