package host_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
)

// nobody is the uid and gid the other user's sockets belong to.
const nobody = 65534

func reattachUnix(t *testing.T, sock string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := host.Reattach(ctx, handshake.Reattach{Protocol: "grpc", ProtocolVersion: 1, Addr: handshake.ReattachAddr{Network: "unix", String: sock}}, host.Options{Versions: []int{1}}, host.ReattachOptions{})
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
	var fe *host.ForeignSocketError
	if !errors.As(err, &fe) || fe.Owner != nobody || fe.Listener || fe.User != 0 {
		t.Fatalf("Reattach to a socket of uid %d: %v (%#v), want a *ForeignSocketError naming the file's owner", nobody, err, fe)
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
	// A directory the other user can reach, holding a copy of this test
	// binary (the build directory is root's alone) that listens as it.
	dir, err := os.MkdirTemp("", "plugkit-foreign-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "listener")
	copyFile(t, exe, bin)
	sock := filepath.Join(dir, "s")
	cmd := exec.Command(bin)
	cmd.Env = []string{modeEnv + "=listen", "PLUGKIT_TEST_SOCKET=" + sock, "GORACE=atexit_sleep_ms=0"}
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
	defer func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-ready:
		if line != "ready\n" {
			t.Fatalf("the listener as uid %d did not start: %q", nobody, line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the listener did not start within 20 s")
	}
	if err := os.Chown(sock, 0, 0); err != nil {
		t.Fatal(err)
	}
	err = reattachUnix(t, sock)
	var fe *host.ForeignSocketError
	if !errors.As(err, &fe) || fe.Owner != nobody || !fe.Listener {
		t.Fatalf("Reattach to a socket served by uid %d: %v (%#v), want a *ForeignSocketError naming the listener's uid", nobody, err, fe)
	}
	if !strings.Contains(err.Error(), "is served by a process of uid 65534") {
		t.Errorf("error does not name the listener's uid: %v", err)
	}
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
