package host

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
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
	return parsePPID(string(data))
}

// parsePPID reads the parent pid from a /proc/PID/stat line: the fourth
// field, counted after the command name, which is in parentheses and may
// itself hold spaces and parentheses.
func parsePPID(stat string) (int, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat line %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("malformed /proc stat line %q", stat)
	}
	return strconv.Atoi(f[1])
}
