package host

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
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

// tcpListeners finds the listening sockets a TCP connection to target
// reaches, from /proc/net/tcp and tcp6: those bound to its address or,
// when none is, to the unspecified one on its port. A busy machine's
// tables can change while read, so an empty answer is read again.
func tcpListeners(target netip.AddrPort) ([]tcpListener, error) {
	want := target.Addr().Unmap()
	for range 3 {
		var exact, wild []tcpListener
		read := false
		for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			data, err := os.ReadFile(file)
			if err != nil {
				continue // no IPv6, say
			}
			read = true
			for _, line := range strings.Split(string(data), "\n")[1:] {
				// sl local_address rem_address st ... uid timeout inode
				f := strings.Fields(line)
				if len(f) < 10 || f[3] != "0A" {
					continue
				}
				local, ok := parseProcAddr(f[1])
				uid, err := strconv.Atoi(f[7])
				if !ok || err != nil || local.Port() != target.Port() {
					continue
				}
				switch a := local.Addr().Unmap(); {
				case a == want:
					exact = append(exact, tcpListener{uid: uid, inode: f[9]})
				case a.IsUnspecified():
					wild = append(wild, tcpListener{uid: uid, inode: f[9]})
				}
			}
		}
		if !read {
			return nil, errors.New("no /proc/net/tcp")
		}
		if len(exact) > 0 {
			return exact, nil
		}
		if len(wild) > 0 {
			return wild, nil
		}
	}
	return nil, nil
}

// parseProcAddr reads an address of /proc/net/tcp{,6}: the IP as 32-bit
// words in hex, each in the machine's byte order, a colon, the port in
// hex.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(portHex, 16, 16)
	if !ok || err != nil || (len(ipHex) != 8 && len(ipHex) != 32) {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(raw[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	ip, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(ip, uint16(port)), true
}

// holdsSocket reports whether process pid has one of the listeners open,
// from its fd table in /proc (readable for this user's processes).
func holdsSocket(pid int, ls []tcpListener) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		target, err := os.Readlink(dir + fd.Name())
		inode, ok := strings.CutPrefix(target, "socket:[")
		if err == nil && ok && slices.ContainsFunc(ls, func(l tcpListener) bool { return l.inode+"]" == inode }) {
			return true
		}
	}
	return false
}
