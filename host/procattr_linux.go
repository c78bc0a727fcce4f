package host

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
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
	spawnOnce sync.Once
	spawns    chan spawnRequest
)

// spawner starts the commands it is sent, from its own locked thread.
func spawner() {
	runtime.LockOSThread() // never unlocked: this thread lives as long as the process
	for r := range spawns {
		r.done <- r.cmd.Start()
	}
}

// startCmd starts cmd from the spawner thread.
func startCmd(cmd *exec.Cmd) (sysProc, error) {
	spawnOnce.Do(func() {
		spawns = make(chan spawnRequest)
		go spawner()
	})
	r := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	spawns <- r
	return sysProc{}, <-r.done
}
