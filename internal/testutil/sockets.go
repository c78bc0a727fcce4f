package testutil

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// CountsListeners reports whether Listeners works here: it reads Linux's
// /proc.
func CountsListeners() bool { return runtime.GOOS == "linux" }

// Listeners counts the listening unix and TCP sockets process pid holds,
// from /proc: the sockets whose inode a listening entry of /proc/net/unix
// (flag __SO_ACCEPTCON), /proc/net/tcp or tcp6 (state 0A) names.
func Listeners(t testing.TB, pid int) int {
	t.Helper()
	listening := map[string]bool{}
	scan := func(file string, match func([]string) (string, bool)) {
		f, err := os.Open(file)
		if err != nil {
			return // no IPv6, say
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		s.Scan() // header
		for s.Scan() {
			if inode, ok := match(strings.Fields(s.Text())); ok {
				listening[inode] = true
			}
		}
	}
	scan("/proc/net/unix", func(f []string) (string, bool) {
		return f[6], len(f) >= 7 && f[3] == "00010000"
	})
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		scan(file, func(f []string) (string, bool) { return f[9], len(f) >= 10 && f[3] == "0A" })
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("reading the fds of %d: %v", pid, err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") && listening[strings.Trim(target, "socket:[]")] {
			n++
		}
	}
	return n
}

// SocketFiles lists the socket files below dir.
func SocketFiles(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type()&os.ModeSocket != 0 {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// LocalListener listens for a test's in-process server: on a unix socket
// in a new temporary directory, or on loopback TCP on Windows (where
// plugins use it, and Wine has no unix sockets). It returns the listener
// and the gRPC target that reaches it.
func LocalListener(t testing.TB) (net.Listener, string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln, ln.Addr().String()
	}
	ln, err := net.Listen("unix", filepath.Join(TempDir(t), "s"))
	if err != nil {
		t.Fatal(err)
	}
	return ln, "unix://" + ln.Addr().String()
}
