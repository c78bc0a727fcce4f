package testutil

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// CountsListeners reports whether Listeners works here: it reads Linux's
// /proc.
func CountsListeners() bool { return runtime.GOOS == "linux" }

// Listeners counts the listening unix and TCP sockets process pid holds,
// from /proc: the sockets whose inode a listening entry of /proc/net/unix
// (flag __SO_ACCEPTCON), /proc/net/tcp or tcp6 (state 0A) names. Those
// files are read in chunks, and an entry can slip between two chunks when
// other sockets open and close meanwhile, so it reads them again (up to
// ten times) while one of pid's sockets is in none of them.
func Listeners(t testing.TB, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("reading the fds of %d: %v", pid, err)
	}
	var socks []string
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			socks = append(socks, strings.Trim(target, "socket:[]"))
		}
	}
	seen, listening := map[string]bool{}, map[string]bool{}
	for range 10 {
		scanSockets(seen, listening)
		if !slices.ContainsFunc(socks, func(s string) bool { return !seen[s] }) {
			break
		}
	}
	n := 0
	for _, s := range socks {
		if listening[s] {
			n++
		}
	}
	return n
}

// scanSockets adds the inode of every entry of /proc/net/unix, tcp and
// tcp6 to seen, and of every listening one to listening.
func scanSockets(seen, listening map[string]bool) {
	scan := func(file string, inode, state int, want string) {
		f, err := os.Open(file)
		if err != nil {
			return // no IPv6, say
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		s.Scan() // header
		for s.Scan() {
			if f := strings.Fields(s.Text()); len(f) > inode {
				seen[f[inode]] = true
				if f[state] == want {
					listening[f[inode]] = true
				}
			}
		}
	}
	scan("/proc/net/unix", 6, 3, "00010000")
	scan("/proc/net/tcp", 9, 3, "0A")
	scan("/proc/net/tcp6", 9, 3, "0A")
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
