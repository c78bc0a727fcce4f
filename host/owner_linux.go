package host

import (
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/plugkit/plugkit/internal/osdep"
)

// socketPeer returns the pid and uid of the process that listens on the
// other end of a unix connection (SO_PEERCRED: as they were when it
// called listen); ok is false when it cannot tell.
func socketPeer(conn net.Conn) (pid, uid int, ok bool) {
	uc, isUnix := conn.(*net.UnixConn)
	if !isUnix {
		return 0, 0, false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || credErr != nil || cred == nil {
		return 0, 0, false
	}
	return int(cred.Pid), int(cred.Uid), true
}

// parentOf reads a process's parent pid from /proc.
func parentOf(pid int) (int, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return osdep.ParsePPID(string(data))
}
