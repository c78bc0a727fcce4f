package host_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/wire"
)

// nobody is the uid and gid the other user's sockets belong to.
const nobody = 65534

func reattachUnix(t *testing.T, sock string) error {
	t.Helper()
	return reattach(t, handshake.Reattach{Protocol: "grpc", ProtocolVersion: 1, Addr: handshake.ReattachAddr{Network: "unix", String: sock}})
}

func reattach(t *testing.T, r handshake.Reattach) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := host.Reattach(ctx, r, host.Options{Versions: []int{1}}, host.ReattachOptions{})
	if err == nil {
		c.Close()
	}
	return err
}

// TestReattachRefusesAnotherUsersSocketFile: a reattach configuration
// naming a socket file that belongs to another uid is refused with an
// error naming the socket and both uids, and nothing connects to it.
func TestReattachRefusesAnotherUsersSocketFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root (uid 0, as CI runs it) to give the socket to another uid; it runs as uid %d: run it as root", os.Geteuid())
	}
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chown(sock, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	err = reattachUnix(t, sock)
	var fe *host.OwnerError
	if !errors.As(err, &fe) || !fe.Foreign || fe.OwnerUID != nobody || fe.Listener || fe.User != 0 {
		t.Fatalf("Reattach to a socket of uid %d: %v (%#v), want a foreign *OwnerError naming the file's owner", nobody, err, fe)
	}
	for _, want := range []string{sock, "belongs to uid 65534", "not this host's user (uid 0)", "refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// Nothing reached the socket: no connection waits in its backlog.
	l.(*net.UnixListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if conn, err := l.Accept(); err == nil {
		conn.Close()
		t.Error("the host connected to the other user's socket")
	}
}

// TestReattachRefusesAnotherUsersListener: a socket file that belongs to
// this user but is served by a process of another uid (the file was handed
// over) is refused too, from the listener's credentials.
func TestReattachRefusesAnotherUsersListener(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root (uid 0, as CI runs it) to run a listener as another uid; it runs as uid %d: run it as root", os.Geteuid())
	}
	dir := foreignDir(t)
	sock := filepath.Join(dir, "s")
	if line, _ := runAsNobody(t, dir, "listen", "PLUGKIT_TEST_SOCKET="+sock); line != "ready" {
		t.Fatalf("the listener as uid %d did not start: %q", nobody, line)
	}
	if err := os.Chown(sock, 0, 0); err != nil {
		t.Fatal(err)
	}
	err := reattachUnix(t, sock)
	var fe *host.OwnerError
	if !errors.As(err, &fe) || !fe.Foreign || fe.OwnerUID != nobody || !fe.Listener {
		t.Fatalf("Reattach to a socket served by uid %d: %v (%#v), want a foreign *OwnerError naming the listener's uid", nobody, err, fe)
	}
	if !strings.Contains(err.Error(), "is served by a process of uid 65534") {
		t.Errorf("error does not name the listener's uid: %v", err)
	}
}

// foreignDir makes a directory the other user can reach (the build
// directory is root's alone).
func foreignDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "plugkit-foreign-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runAsNobody runs a copy of this test binary, in dir, as uid nobody in
// the given test plugin mode with env, and returns the first line it
// prints (without its newline) and stop, which closes its stdin (the
// modes end then), waits for it and returns what else it printed. The
// test's end stops it too.
func runAsNobody(t *testing.T, dir, mode string, env ...string) (first string, stop func() string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "as-nobody")
	copyFile(t, exe, bin)
	cmd := exec.Command(bin)
	cmd.Env = append([]string{modeEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready, after := make(chan string, 1), make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		ready <- strings.TrimSuffix(line, "\n")
		more, _ := io.ReadAll(r)
		after <- string(more)
	}()
	var once sync.Once
	var rest string
	stop = func() string {
		once.Do(func() {
			stdin.Close()
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			select {
			case rest = <-after:
			case <-time.After(10 * time.Second):
			}
		})
		return rest
	}
	t.Cleanup(func() { stop() })
	select {
	case first = <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("the process as uid %d did not start within 20 s", nobody)
	}
	return first, stop
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReattachRefusesAnotherUsersTCPListener: a reattach configuration
// naming a loopback TCP address on which a process of another uid
// listens (a stale TF_REATTACH_PROVIDERS whose port another user took,
// with an unrelated Pid 1) is refused with a foreign *OwnerError naming
// the listener's uid, and no connection reaches the listener.
func TestReattachRefusesAnotherUsersTCPListener(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root (uid 0, as CI runs it) to run a listener as another uid; it runs as uid %d: run it as root", os.Geteuid())
	}
	first, stop := runAsNobody(t, foreignDir(t), "listentcp")
	addr, ok := strings.CutPrefix(first, "ready ")
	if !ok {
		t.Fatalf("the TCP listener as uid %d did not start: %q", nobody, first)
	}
	err := reattach(t, handshake.Reattach{Protocol: "grpc", ProtocolVersion: 1, Pid: 1, Addr: handshake.ReattachAddr{Network: "tcp", String: addr}})
	var fe *host.OwnerError
	if !errors.As(err, &fe) || !fe.Foreign || fe.OwnerUID != nobody || !fe.Listener || fe.Address != addr {
		t.Fatalf("Reattach to %s, served by uid %d: %v (%#v), want a foreign *OwnerError naming the listener's uid", addr, nobody, err, fe)
	}
	for _, want := range []string{addr, "is served by a process of uid 65534", "refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if rest := stop(); strings.Contains(rest, "accepted") {
		t.Errorf("the host connected to the other user's listener (it printed %q)", rest)
	}
}

// TestReattachRefusesTCPListenerOfAnotherPid: a TCP listener of this user
// that the reattach configuration's Pid does not hold (another process of
// this user listens there) is refused with an *OwnerError naming its Pid; with the
// Pid of the process that listens, the reattach goes through.
func TestReattachRefusesTCPListenerOfAnotherPid(t *testing.T) {
	for _, local := range []string{"127.0.0.1:0", "[::1]:0", ":0"} {
		t.Run(local, func(t *testing.T) { reattachOtherPid(t, local) })
	}
}

func reattachOtherPid(t *testing.T, local string) {
	ln, err := net.Listen("tcp", local)
	if err != nil {
		t.Fatalf("listening on %s (this test needs IPv4 and IPv6 loopback): %v", local, err)
	}
	srv := grpc.NewServer()
	h := health.NewServer()
	h.SetServingStatus(wire.HealthService, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, h)
	go srv.Serve(ln)
	defer srv.Stop()

	// Another process of this user, alive, that holds no listener.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	other := exec.Command(exe)
	other.Env = []string{modeEnv + "=sleep", "GORACE=atexit_sleep_ms=0"}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()

	addr := ln.Addr().String()
	if local == ":0" {
		// Bound to every address: reached through loopback.
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	r := handshake.Reattach{Protocol: "grpc", ProtocolVersion: 1, Pid: other.Process.Pid, Addr: handshake.ReattachAddr{Network: "tcp", String: addr}}
	err = reattach(t, r)
	var oe *host.OwnerError
	if !errors.As(err, &oe) || oe.Pid != r.Pid || oe.Foreign || oe.Unchecked {
		t.Fatalf("Reattach to %s naming pid %d, which does not listen there: %v; want an *OwnerError naming that pid", addr, r.Pid, err)
	}
	for _, want := range []string{addr, fmt.Sprintf("pid %d", r.Pid)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	r.Pid = os.Getpid()
	if err := reattach(t, r); err != nil {
		t.Errorf("Reattach to %s naming the pid that listens there: %v", addr, err)
	}
}
